// Rate units and the conversions between units of one kind: a catalog row keeps the unit its source states
// (0.20 USD per 1m-requests), the estimate asks in its own (per request), and a user may write either.
import { PRICE_UNITS } from "../recipe/schema.js";

export type PriceUnit = (typeof PRICE_UNITS)[number];
export { PRICE_UNITS };

/** Each unit as a multiple of its kind's base unit: 1 vcpu-hour = 3600 vcpu-seconds. */
const UNIT_BASE: Readonly<Record<PriceUnit, readonly [base: string, count: number]>> = {
  "node-hour": ["node-hour", 1],
  "node-second": ["node-hour", 1 / 3600],
  "device-hour": ["device-hour", 1],
  "device-second": ["device-hour", 1 / 3600],
  "vcpu-hour": ["vcpu-second", 3600],
  "vcpu-second": ["vcpu-second", 1],
  "gib-hour": ["gib-second", 3600],
  "gib-second": ["gib-second", 1],
  "gb-second": ["gb-second", 1],
  request: ["request", 1],
  "1k-requests": ["request", 1e3],
  "10k-requests": ["request", 1e4],
  "1m-requests": ["request", 1e6],
  "gb-month": ["gb-month", 1],
  gb: ["gb", 1],
  "CNY/USD": ["CNY/USD", 1],
};

export function isPriceUnit(u: string): u is PriceUnit {
  return Object.hasOwn(UNIT_BASE, u);
}

/**
 * A price per `from` unit expressed per `to` unit, or undefined when the units measure different things
 * (a node-hour rate cannot price device-hours).
 */
export function convertPrice(value: number, from: string, to: string): number | undefined {
  if (!isPriceUnit(from) || !isPriceUnit(to)) return from === to ? value : undefined;
  const [fromBase, fromCount] = UNIT_BASE[from];
  const [toBase, toCount] = UNIT_BASE[to];
  if (fromBase !== toBase) return undefined;
  return (value / fromCount) * toCount;
}
