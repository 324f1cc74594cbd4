// What the plan builder knows about each test kind. The parameter tables
// (names, labels with units, defaults, ranges, choices) are the agent's own,
// typed once in protocol/src/params/spec.rs and generated into
// generated/params.ts at build time; this module adds how the form shows
// them and helpers about kinds.

import { TABLE, type ParamSpec as TableSpec } from '../generated/params';
import { sizeText } from '../units';

export type { LimitName, ParamType } from '../generated/params';

export interface ParamSpec extends TableSpec {
  /** The agent's default as the form shows it ('' = none). */
  def: string;
}

/** The default as text a user would type (sizes as `128K`), or how the agent works it out. */
function defText(p: TableSpec): string {
  const d = p.default;
  if (d == null) return p.derived ?? '';
  return typeof d === 'number' && p.type === 'size' ? sizeText(d) : String(d);
}

/** Every kind's label and parameters; the unix kinds leave out what only IP sockets have. */
export const KINDS: Record<string, { label: string; params: ParamSpec[] }> = Object.fromEntries(
  Object.entries(TABLE).map(([kind, { label, params }]) => [
    kind,
    { label, params: params.filter((p) => !(kind.startsWith('unix_') && p.tcp)).map((p) => ({ ...p, def: defText(p) })) },
  ]),
);

/** Why `v` is outside the range every agent enforces for `s` (its limits aside), or null. */
export function rangeError(s: TableSpec, v: number, text = String(v)): string | null {
  const low = s.min != null && (s.minExclusive ? v <= s.min : v < s.min);
  const high = s.max != null && v > s.max;
  if (!low && !high) return null;
  if (s.min != null && s.max != null && !s.minExclusive) return `${s.name}: must be between ${s.min} and ${s.max}, got ${text}`;
  if (low) return `${s.name}: must be ${s.minExclusive ? 'above' : 'at least'} ${s.min}, got ${text}`;
  return `${s.name}: must be at most ${s.max}, got ${text}`;
}

/**
 * The kind's either-or pairs, `[given instead, the other]` (udp_stream:
 * `rate` instead of `wait_us`): the agents refuse both, so the form offers one.
 */
export function alternatives(kind: string): [string, string][] {
  return (KINDS[kind]?.params ?? []).filter((p) => p.insteadOf).map((p) => [p.name, p.insteadOf!]);
}

/** A field's short name in a choice between two (`wait_us` -> `wait`). */
export const choiceName = (name: string) => name.replace(/_(us|ms|s|bytes)$/, '');

export const isRr = (kind: string) => kind.endsWith('_rr');
export const isStream = (kind: string) => kind === 'tcp_stream' || kind === 'unix_stream';

/** Parameters that can be swept, plus the categorical axes. */
export function sweepable(kind: string): string[] {
  const ps = KINDS[kind]?.params ?? [];
  const nums = ps.filter((p) => p.type === 'size' || p.type === 'int' || p.type === 'float' || p.type === 'rate').map((p) => p.name);
  const cats = ps.filter((p) => p.type === 'enum' || p.type === 'bool' || p.type === 'text').map((p) => p.name);
  const transport = kind === 'tcp_stream' || kind === 'tcp_rr' || kind.startsWith('unix_') ? ['transport'] : [];
  return [...nums, ...transport, ...cats];
}

export const TRANSPORTS = ['unix', 'tcp', 'tcp_local'];

/** Who sends: by direction, seen from the driving (client) agent. */
export function sends(role: 'client' | 'server', d: string): boolean {
  return d === 'both' || (d === 'send') === (role === 'client');
}
