// Secrets on Lambda. A name is looked up in this order: <NAME>_SECRET_ARN (a secret holding just that value),
// RLPIPE_SECRET_ARN (a secret holding a JSON object {"E2B_API_KEY": …, "RLPIPE_SANDBOX_TOKEN": …, …}), then
// the environment variable <NAME>. Placeholder until the Secrets Manager client lands.
export function awsSecretReader(env: NodeJS.ProcessEnv, _fetch: typeof fetch): (name: string) => Promise<string | undefined> {
  return async (name) => env[name];
}
