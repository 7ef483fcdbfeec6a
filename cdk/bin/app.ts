// The CDK app cdk.json runs (`node dist/cdk/bin/app.js`): build first (`npm run build`), then `npx cdk synth`.
import { App } from "aws-cdk-lib";
import { defineRlpipeApp } from "../lib/app.js";

const app = new App();
defineRlpipeApp(app);
app.synth();
