// Money, quantities and ranges as the cost report prints them: a currency symbol on every amount, precision that
// fits the size (whole units for large totals, cents for small ones, significant digits for tiny unit prices),
// thousands separated, and ranges written low–high or low – expected – high. Pure and locale-independent.
import type { Currency, FxRate, Range } from "../types.js";

export const CURRENCY_SYMBOL: Readonly<Record<Currency, string>> = { CNY: "¥", USD: "$" };

/** Digits of a non-negative number with a comma every three places ("1234567.5" → "1,234,567.5"). */
function group(digits: string): string {
  const [int, frac] = digits.split(".");
  const grouped = int!.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  return frac === undefined ? grouped : `${grouped}.${frac}`;
}

/** `v` to `sig` significant digits, plain notation, trailing zeros after the point dropped. */
function significant(v: number, sig: number): string {
  if (v === 0) return "0";
  const decimals = Math.max(0, sig - 1 - Math.floor(Math.log10(Math.abs(v))));
  return trimZeros(v.toFixed(Math.min(decimals, 12)));
}

function trimZeros(s: string): string {
  return s.includes(".") ? s.replace(/0+$/, "").replace(/\.$/, "") : s;
}

function signed(v: number, body: string, symbol: string): string {
  return `${v < 0 ? "−" : ""}${symbol}${body}`;
}

/** Decimals for amounts up to `max`: none from 100 up, cents from 1, two significant digits below 1. */
function moneyDecimals(max: number): number {
  const a = Math.abs(max);
  if (a >= 100) return 0;
  if (a >= 1 || a === 0) return 2;
  return Math.min(8, Math.max(2, 1 - Math.floor(Math.log10(a))));
}

function money(v: number, currency: Currency, decimals: number): string {
  const body = group(Math.abs(v).toFixed(decimals));
  if (Number(body.replace(/,/g, "")) === 0) return `${CURRENCY_SYMBOL[currency]}0`;
  return signed(v, body, CURRENCY_SYMBOL[currency]);
}

/** An amount of money: ¥12,340 and ¥340 (whole units from 100), ¥12.30 (cents from 1), ¥0.42 / ¥0.0042 below 1, ¥0. */
export function formatMoney(v: number, currency: Currency): string {
  return money(v, currency, moneyDecimals(v));
}

/** A unit price: up to four significant digits, at least cents (¥7.50, $0.0504, $0.000014, ¥1,234.5). */
export function formatRate(v: number, currency: Currency): string {
  const a = Math.abs(v);
  const sym = CURRENCY_SYMBOL[currency];
  if (a === 0) return `${sym}0`;
  let body = a >= 1000 ? trimZeros(a.toFixed(2)) : significant(a, 4);
  const dot = body.indexOf(".");
  if (dot < 0) body = a < 1000 ? `${body}.00` : body;
  else if (body.length - dot - 1 < 2) body = body.padEnd(dot + 3, "0");
  return signed(v, group(body), sym);
}

/** low–high of an amount, both at the precision of the larger; one amount when they print alike. */
export function formatMoneyRange(r: Range, currency: Currency): string {
  const d = moneyDecimals(Math.max(Math.abs(r.low), Math.abs(r.high)));
  const lo = money(r.low, currency, d);
  const hi = money(r.high, currency, d);
  return lo === hi ? lo : `${lo}–${hi}`;
}

/** low – expected – high of an amount, at the precision of the largest. */
export function formatMoneyTriple(r: Range, currency: Currency): string {
  const d = moneyDecimals(Math.max(Math.abs(r.low), Math.abs(r.expected), Math.abs(r.high)));
  return `${money(r.low, currency, d)} – ${money(r.expected, currency, d)} – ${money(r.high, currency, d)}`;
}

/** A count or quantity: 1.2M, 45.3k, 1,234, 36.4, 0.52 (three significant digits below 10,000). */
export function formatQuantity(v: number): string {
  const a = Math.abs(v);
  const sign = v < 0 ? "−" : "";
  if (a >= 1e9) return `${sign}${significant(a / 1e9, 3)}G`;
  if (a >= 1e6) return `${sign}${significant(a / 1e6, 3)}M`;
  if (a >= 1e4) return `${sign}${significant(a / 1e3, 3)}k`;
  if (a >= 100) return `${sign}${group(a.toFixed(0))}`;
  return `${sign}${significant(a, 3)}`;
}

/** low–high of a quantity, or one value when they print alike. */
export function formatQuantityRange(r: Range): string {
  const lo = formatQuantity(r.low);
  const hi = formatQuantity(r.high);
  return lo === hi ? lo : `${lo}–${hi}`;
}

/** Convert an amount between CNY and USD at the report's rate. */
export function convert(v: number, from: Currency, to: Currency, fx: FxRate): number {
  if (from === to) return v;
  return from === "USD" ? v * fx.cnyPerUsd : v / fx.cnyPerUsd;
}

export function convertRange(r: Range, from: Currency, to: Currency, fx: FxRate): Range {
  return { low: convert(r.low, from, to, fx), expected: convert(r.expected, from, to, fx), high: convert(r.high, from, to, fx) };
}

/** "¥7.10 per $1 (source, read 2026-07-01)". */
export function formatFx(fx: FxRate): string {
  return `${formatRate(fx.cnyPerUsd, "CNY")} per $1 (${fx.source}, read ${fx.dateRead})`;
}

/** "s/step" seconds as the report prints them: 45–65 s/step. */
export function formatSeconds(r: Range): string {
  return `${formatQuantityRange(r)} s/step`;
}

/** A run's expected wall time in units that read: "10.3 days / 247 h", "14.5 h", "1.3 min" (not "0.000926 days"). */
export function formatWallTime(hours: number): string {
  if (hours >= 24) return `${formatQuantity(hours / 24)} days / ${formatQuantity(hours)} h`;
  if (hours >= 1) return `${formatQuantity(hours)} h`;
  return `${formatQuantity(hours * 60)} min`;
}
