// `import { … } from "rlpipe/cdk"`: the constructs and stacks, for composing rlpipe's functions in your own CDK app. (The
// repository's own app, cdk/lib/app.ts with cdk-nag, is not part of it: add the nag pack of your choice to your app.)
export { CheckpointBucket, type CheckpointBucketProps, HardenedBucket, type HardenedBucketProps } from "./checkpoint-bucket.js";
export { RlpipeSecret, type RlpipeSecretProps, SECRET_KEYS } from "./secret.js";
export { type EndpointAuth, FUNCTION_ENV, RlpipeFunction, type RlpipeFunctionOptions } from "./function.js";
export { RewardFunction, type RewardFunctionProps } from "./reward-function.js";
export { type FunctionSandbox, type SandboxSettings, sandboxEnvironment } from "./sandbox-settings.js";
export { RunsFunction, type RunsFunctionProps } from "./runs-function.js";
export { ConsoleFunctions, type ConsoleFunctionsProps, type RunStore } from "./console-functions.js";
export { type PrefixAccess, type PrefixGrantOptions, grantPrefix } from "./bucket-prefix.js";
export { RlpipeStatefulStack, type RlpipeStatefulStackProps } from "./stateful-stack.js";
export { RlpipeFunctionsStack, type RlpipeFunctionsStackProps } from "./functions-stack.js";
export { RlpipeStage, type RlpipeStageProps, type RlpipeStacksProps, defineRlpipeStacks } from "./stacks.js";
export { PIPELINE_SYNTH_COMMANDS, RlpipePipelineStack, type RlpipePipelineStackProps } from "./pipeline-stack.js";
