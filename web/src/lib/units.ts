// Sizes and rates as people type and read them.
// Input sizes are binary (1K = 1024, as in socketsend's `1M`); rates follow
// the seeds: MByte/s is 10^6 bytes per second, Gbit/s is 10^9 bits per second.
// The SI prefixes and the agent's limits are the protocol's tables
// (protocol/src/units.rs, protocol/src/params/limits.rs), generated.

import { LIMITS, MS_FROM_US, SI_PREFIXES, type LimitSpec } from './generated/params';
import type { Limits } from './generated/wire/Limits';

const SUFFIX: Record<string, number> = { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4 };

/** Parses `1M`, `64K`, `128k`, `1G`, `1.5M`, `4096`, `64KiB` into bytes; NaN if it is not a size. */
export function parseSize(text: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$/i.exec(text);
  if (!m) return NaN;
  const n = Number(m[1]) * SUFFIX[m[2].toLowerCase()];
  return Number.isInteger(n) ? n : NaN;
}

/** Parses a rate in bits per second as iperf3's `-b` reads it: `20M`, `1.5G`, `64k`, `1000` (k, M, G: powers of 1000); NaN if it is not one. */
export function parseRate(text: string): number {
  const m = /^\s*(\d+(?:\.\d+)?(?:e\d+)?)\s*([kmg]?)\s*$/i.exec(text);
  if (!m) return NaN;
  return Number(m[1]) * (SI_PREFIXES.find((p) => p.prefix.toLowerCase() === m[2].toLowerCase())?.div ?? NaN);
}

/** `1048576` -> `1 MiB`, `1500` -> `1500 B`: exact binary units when they fit. */
export function formatSize(bytes: number): string {
  for (const [s, f] of [['GiB', 1024 ** 3], ['MiB', 1024 ** 2], ['KiB', 1024]] as const) {
    if (bytes >= f && bytes % f === 0) return `${bytes / f} ${s}`;
  }
  return `${bytes} B`;
}

/** Bytes with thousands separators, exact. */
export function formatBytes(bytes: number): string {
  // A figure a file lacks is a dash, as fmt shows it, not a thrown error.
  if (typeof bytes !== 'number' || !Number.isFinite(bytes)) return '–';
  return bytes.toLocaleString('en-US');
}

export const mbytePerS = (bytes: number, seconds: number): number => (seconds > 0 ? bytes / seconds / 1e6 : NaN);
export const gbitPerS = (bitsPerSecond: number): number => bitsPerSecond / 1e9;

/** A number with `digits` significant digits, no exponent for ordinary magnitudes. */
export function fmt(v: number | null | undefined, digits = 4): string {
  if (v == null || !Number.isFinite(v)) return '–';
  if (v === 0) return '0';
  const a = Math.abs(v);
  if (a >= 10 ** digits) return Math.round(v).toLocaleString('en-US');
  return Number(v.toPrecision(digits)).toString();
}

/** `1048576` -> `1M`, `1536` -> `1536`: the shortest text parseSize reads back exactly. */
export function sizeText(bytes: number): string {
  for (const [s, f] of [['G', 1024 ** 3], ['M', 1024 ** 2], ['K', 1024]] as const) {
    if (bytes >= f && bytes % f === 0) return `${bytes / f}${s}`;
  }
  return String(bytes);
}

/** Bit-rate units, largest first: SI prefixes, powers of 1000 (as iperf3 and the seeds print them). */
const RATE_UNITS = SI_PREFIXES.map((p) => ({ unit: `${p.prefix}bit/s`, div: p.div }));

/** A rate unit that suits values up to `maxBps` (bits per second): the largest in which it is at least 1. */
export function rateUnit(maxBps: number): { unit: string; div: number } {
  const a = Math.abs(maxBps);
  return RATE_UNITS.find((u) => a >= u.div) ?? RATE_UNITS[RATE_UNITS.length - 1];
}

/**
 * Times on the page are microseconds (µs, the SI symbol; files and summary
 * keys keep `_us`) up to 10 ms and milliseconds above: one rule for every
 * figure, plot axis, legend, matrix and fleet figure, the CLI's too
 * (protocol/src/units.rs `MS_FROM_US`, `duration_us`, which writes `us`).
 */
export const MICRO = 'µs';

/** A time unit that suits values up to `maxUs` (microseconds). */
export function timeUnit(maxUs: number): { unit: string; div: number } {
  if (Math.abs(maxUs) >= MS_FROM_US) return { unit: 'ms', div: 1e3 };
  return { unit: MICRO, div: 1 };
}

/**
 * A figure with its unit as the page says it: a time (unit `µs`, or the
 * protocol's `us`) by the one time rule, anything else its number and
 * unit: `449 µs`, `12.87 ms`, `9.41 Gbit/s`, `3 hops`.
 */
export function figureText(v: number, unit: string, digits = 4): string {
  if (unit === MICRO || unit === 'us') {
    const u = timeUnit(v);
    return `${fmt(v / u.div, digits)} ${u.unit}`;
  }
  return `${fmt(v, digits)}${unit ? ` ${unit}` : ''}`;
}

/** A figure's label as the protocol words it ("median round-trip time, us") with the page's µs. */
export const pageLabel = (label: string): string => label.replace(/, us$/, `, ${MICRO}`);

/**
 * A bit rate as the page shows it everywhere: `28.05 Gbit/s`, `950 Mbit/s`,
 * `12.5 kbit/s`, `0 bit/s`: scaled to the unit in which it reads as 1 to
 * 999 (Gbit/s at most, grouped past 9,999), four significant digits, a space
 * before the unit. A value that rounds up to the next unit takes it
 * (999.96 Mbit/s is `1 Gbit/s`).
 */
export function formatRate(bps: number | null | undefined, digits = 4): string {
  if (bps == null || !Number.isFinite(bps)) return '–';
  let u = rateUnit(bps);
  const up = RATE_UNITS[RATE_UNITS.findIndex((x) => x.unit === u.unit) - 1];
  if (up && Math.abs(Number((bps / u.div).toPrecision(digits))) >= 1000) u = up;
  return `${fmt(bps / u.div, digits)} ${u.unit}`;
}

/** "65.2 µs" or "12.1 ms", choosing the unit. */
export function formatUs(us: number): string {
  const u = timeUnit(us);
  return `${fmt(us / u.div)} ${u.unit}`;
}

/**
 * Text from an agent or the protocol (refusals, notes, step errors) as the
 * page writes units: a number's `us` becomes `µs` ("wait at most 500 us" ->
 * "wait at most 500 µs", "2.5 us/byte" -> "2.5 µs/byte"). The agent keeps
 * ASCII `us` for the terminal and logs (as iperf3 and netperf print it), and
 * the text is stored as the agent wrote it; only what the page shows is
 * rewritten, here. Names (`wait_us`, `rtt_us`) and words are left alone: only
 * `us` right after a digit, with at most one space between, is a unit.
 */
export function pageText(text: string): string;
export function pageText(text: string | null | undefined): string | null | undefined;
export function pageText(text: string | null | undefined): string | null | undefined {
  return text == null ? text : text.replace(/(\d ?)us\b/g, `$1${MICRO}`);
}

/** One of an agent's limits as its card says it: `≤ 64 streams`, `message size ≤ 64 MiB`, `UDP rate ≤ 1 Gbit/s`. */
export function limitText(l: LimitSpec, v: number): string {
  switch (l.unit) {
    case 'bytes':
      return `${l.what} ≤ ${formatSize(v)}`;
    case 's':
      return `${l.what} ≤ ${v} s`;
    case 'bit/s':
      return `${l.what} ≤ ${formatRate(v)}`;
    default:
      return `≤ ${v.toLocaleString('en-US')} ${l.what}`;
  }
}

/** An agent's limits (its `hello`'s), each as `limitText` says it, in the protocol's order; an absent one (no cap) left out. */
export function limitsText(limits: Limits): string {
  return LIMITS.flatMap((l) => {
    const v = limits[l.name];
    return v == null ? [] : [limitText(l, v)];
  }).join(', ');
}
