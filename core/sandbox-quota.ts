// A managed sandbox account's limits (E2B plans; Tencent AGS takes explicit numbers) and the share of them one
// function instance may use. Every instance of the reward function shares one API key, and the provider counts
// concurrent sandboxes and creates per second per account, not per caller: each instance keeps to its share so that
// all of them together stay within the account (e2b.dev/docs/sandbox/rate-limits). Pure.
import { z } from "zod";

export const E2B_TIERS = ["hobby", "pro"] as const;
export type E2BTier = (typeof E2B_TIERS)[number];

/** The plans' limits: Hobby 20 concurrent sandboxes and 1 create/s; Pro 100 (1,100 with the add-on) and 5 creates/s. */
export const TIER_LIMITS: Readonly<Record<E2BTier, AccountLimits>> = {
  hobby: { maxSandboxes: 20, createsPerS: 1 },
  pro: { maxSandboxes: 100, createsPerS: 5 },
};

const posInt = z.number().int().positive();

/** What the account allows: explicit numbers win over the tier's (a Pro add-on, an AGS quota). */
export const AccountQuota = z.strictObject({
  tier: z.enum(E2B_TIERS).default("hobby").describe("The E2B plan; hobby is the safe default (the lowest limits)."),
  maxSandboxes: posInt.optional().describe("Concurrent sandboxes the account allows; default the tier's."),
  createsPerS: z.number().positive().finite().optional().describe("Sandbox creates per second the account allows; default the tier's."),
  instances: posInt.default(1).describe("Function instances sharing the account: the function's reserved (or maximum) concurrency."),
});
export type AccountQuota = Readonly<z.infer<typeof AccountQuota>>;

export interface AccountLimits {
  readonly maxSandboxes: number;
  readonly createsPerS: number;
}

export interface InstanceShare extends AccountLimits {
  readonly account: AccountLimits;
  readonly instances: number;
  /** Set when instances outnumber the account's sandboxes: the shares together exceed it (E2B's 429 is then the backstop). */
  readonly oversubscribed: boolean;
}

export function accountLimits(q: AccountQuota): AccountLimits {
  const tier = TIER_LIMITS[q.tier];
  return { maxSandboxes: q.maxSandboxes ?? tier.maxSandboxes, createsPerS: q.createsPerS ?? tier.createsPerS };
}

/**
 * One instance's share. Sandboxes: floor(account / instances), at least 1 — an instance without a sandbox could
 * answer nothing, so with more instances than sandboxes the shares overshoot and E2B's own 429 (retried with
 * backoff) is what holds the account. Creates per second: account / instances, not floored: a rate may be
 * fractional (20 Hobby instances create one sandbox every 20 s each), so the instances never exceed the account.
 */
export function instanceShare(q: AccountQuota): InstanceShare {
  const account = accountLimits(q);
  return {
    account, instances: q.instances,
    maxSandboxes: Math.max(1, Math.floor(account.maxSandboxes / q.instances)),
    createsPerS: account.createsPerS / q.instances,
    oversubscribed: q.instances > account.maxSandboxes,
  };
}
