// Credentials for the loopback fakes, made fresh for every run in each provider's own format (so redaction and
// signing see realistic shapes) — never written out in the source, where they would read as leaked keys.
import { randomBytes } from "node:crypto";

const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const pick = (alphabet: string, n: number) => Array.from(randomBytes(n), (b) => alphabet[b % alphabet.length]).join("");

/** Huawei Cloud access key: 20 upper-case letters and digits. */
export const fakeHuaweiAk = () => pick("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", 20);
/** Huawei Cloud secret key: 40 letters and digits. */
export const fakeHuaweiSk = () => pick(alnum, 40);
/** A temporary security token (base64 with '+', '/' and '=' to exercise encoding). */
export const fakeSecurityToken = () => `${randomBytes(48).toString("base64")}+/=`;
/** Tencent Cloud SecretId: "AKID" and 32 letters and digits. */
export const fakeTencentSecretId = () => `AKID${pick(alnum, 32)}`;
/** E2B API key: "e2b_" and 40 hex digits. */
export const fakeE2bKey = () => `e2b_${randomBytes(20).toString("hex")}`;
/** Tencent Cloud SecretKey: 32 letters and digits. */
export const fakeTencentSecretKey = () => pick(alnum, 32);
/** AWS access key id: "AKIA" and 16 upper-case letters and digits 2-7 (a shape redaction recognises on its own). */
export const fakeAwsAccessKeyId = () => `AKIA${pick("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)}`;
