// The one Secrets Manager secret the functions read at cold start: a JSON object with the sandbox vendor's API key
// and the tokens the functions check. The functions get its ARN in their environment and a read grant, never a value.
import { Validations } from "aws-cdk-lib";
import type { IKey } from "aws-cdk-lib/aws-kms";
import { Secret } from "aws-cdk-lib/aws-secretsmanager";
import { Construct } from "constructs";

/** The keys of the secret's JSON value (each read by name through the functions' SecretSource). */
export const SECRET_KEYS = {
  /** E2B or Tencent AGS API key (the reward/tool function's sandbox backend); set it after the first deploy. */
  e2bApiKey: "E2B_API_KEY",
  /** Bearer/path token of the reward/tool API; generated at creation. */
  sandboxToken: "RLPIPE_SANDBOX_TOKEN",
  /** Secret the runs function derives per-run tokens from (HMAC); set it after the first deploy. */
  runsSecret: "RLPIPE_RUNS_SECRET",
  /** Bearer token of the console handlers over HTTPS (only with their endpoint); empty: direct invocations only. */
  consoleToken: "RLPIPE_CONSOLE_TOKEN",
} as const;

export interface RlpipeSecretProps {
  /**
   * A customer-managed KMS key to encrypt the secret with.
   * @default the account's AWS-managed key for Secrets Manager (aws/secretsmanager)
   */
  readonly encryptionKey?: IKey;
  /**
   * Description shown in the Secrets Manager console.
   * @default a description naming the keys the JSON value holds
   */
  readonly description?: string;
}

/**
 * A Secrets Manager secret whose JSON value holds `E2B_API_KEY`, `RLPIPE_SANDBOX_TOKEN` (generated: 48 letters and
 * digits), `RLPIPE_RUNS_SECRET` and `RLPIPE_CONSOLE_TOKEN`. The others start empty — put them with
 * `aws secretsmanager put-secret-value` after the first deploy; a function that needs one and finds it empty
 * answers 503 naming it (the console's token is optional: empty keeps its HTTPS endpoint closed).
 */
export class RlpipeSecret extends Construct {
  readonly secret: Secret;

  constructor(scope: Construct, id: string, props: RlpipeSecretProps = {}) {
    super(scope, id);
    this.secret = new Secret(this, "Secret", {
      description: props.description ?? `rlpipe functions: JSON with ${Object.values(SECRET_KEYS).join(", ")}`,
      ...(props.encryptionKey === undefined ? {} : { encryptionKey: props.encryptionKey }),
      generateSecretString: {
        secretStringTemplate: JSON.stringify({ [SECRET_KEYS.e2bApiKey]: "", [SECRET_KEYS.runsSecret]: "", [SECRET_KEYS.consoleToken]: "" }),
        generateStringKey: SECRET_KEYS.sandboxToken,
        passwordLength: 48,
        excludePunctuation: true,
      },
    });
    Validations.of(this.secret).acknowledge({
      id: "AwsSolutions-SMG4",
      reason: "third-party API key rotated externally: the E2B/AGS key is issued and rotated in the vendor's console; the tokens are rotated by putting a new value between runs, since a training job holds its token for the run's lifetime and a rotation Lambda would cut it off mid-run",
    });
  }
}
