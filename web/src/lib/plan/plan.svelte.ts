// The plan being edited (kind, parameter texts, sweep axes, repetitions) and
// its conversion to the plan format of protocol/src/plan.rs. Expansion into
// steps is the wasm module's job (`expand_plan`), never done here.

import { alternatives, choiceName, KINDS, rangeError, type ParamSpec } from './kinds';
import { parseRate, parseSize, sizeText } from '../units';

export type Direction = 'send' | 'receive' | 'both';
export type AxisForm = 'list' | 'range' | 'pow2';
export interface AxisEdit {
  param: string;
  form: AxisForm;
  list: string;
  from: string;
  to: string;
  step: string;
  lo: string;
  hi: string;
  perOctave: string;
}
export type Params = Record<string, number | string | boolean>;
/** Histogram bins a plan asks for (udp_req_timo -b/-m), in us. */
export interface HistSpec {
  bin_us: number;
  low_us?: number;
}
export interface PlanJson {
  name?: string;
  description?: string;
  histogram?: HistSpec;
  kind: string;
  params: Params;
  sweep: Record<string, unknown>;
  repeat: number;
}

const initialValues = (kind: string) =>
  Object.fromEntries(KINDS[kind].params.map((p) => [p.name, p.initial ?? '']));
/** Which of each either-or pair a new plan offers: the one pre-filled (udp_stream: the wait). */
const initialPicks = (kind: string) =>
  Object.fromEntries(alternatives(kind).map(([alt, other]) => [alt, KINDS[kind].params.find((p) => p.name === alt)?.initial ? alt : other]));

export const plan = $state({
  name: '',
  description: '',
  kind: 'tcp_stream',
  values: initialValues('tcp_stream') as Record<string, string>,
  bound: 'count' as 'count' | 'duration',
  /** Each either-or pair's chosen field, keyed by the one given instead (`rate`: 'rate' or 'wait_us'). */
  picks: initialPicks('tcp_stream') as Record<string, string>,
  axes: [] as AxisEdit[],
  repeat: 1,
  /** Kept from a loaded plan (a preset's histogram bins); dropped with the kind. */
  histogram: null as HistSpec | null,
});

/** What choosing duration puts in an empty seconds field (iperf3's `-t` default). */
export const DEFAULT_DURATION_S = '10';

/** Stops by duration (filling the seconds when empty) or by count. */
export function chooseBound(b: 'count' | 'duration'): void {
  plan.bound = b;
  if (b === 'duration' && !(plan.values.duration_s ?? '').trim()) plan.values.duration_s = DEFAULT_DURATION_S;
}

export function setKind(kind: string): void {
  // A plan stopped by duration keeps its seconds across kinds (issue 45, item 14).
  const seconds = plan.bound === 'duration' ? (plan.values.duration_s ?? '').trim() : '';
  plan.kind = kind;
  plan.values = initialValues(kind);
  if (plan.bound === 'duration' && 'duration_s' in plan.values) plan.values.duration_s = seconds || DEFAULT_DURATION_S;
  plan.picks = initialPicks(kind);
  plan.axes = [];
  plan.name = plan.description = '';
  plan.histogram = null;
}

export const newAxis = (param: string): AxisEdit => ({
  param, form: param === 'transport' ? 'list' : 'pow2',
  list: param === 'transport' ? 'unix, tcp, tcp_local' : '', from: '', to: '', step: '', lo: '1K', hi: '64K', perOctave: '1',
});

const specOf = (kind: string, name: string): ParamSpec | undefined => KINDS[kind]?.params.find((p) => p.name === name);

/** One typed value from its text, or an error naming the parameter. */
function value(spec: ParamSpec | undefined, name: string, text: string): number | string | boolean | Error {
  const t = text.trim();
  const type = spec?.type ?? 'text';
  if (type === 'size') {
    const n = parseSize(t);
    return Number.isNaN(n) ? new Error(`${name}: "${t}" is not a size: use bytes or a suffix K, M, G (1K = 1024)`) : n;
  }
  if (type === 'rate') {
    const n = parseRate(t);
    return Number.isNaN(n) ? new Error(`${name}: "${t}" is not a rate: use bits per second or a suffix k, M, G (1M = 1000000)`) : n;
  }
  if (type === 'int' || type === 'float') {
    const n = Number(t);
    if (t === '' || !Number.isFinite(n)) return new Error(`${name}: "${t}" is not a number`);
    if (type === 'int' && !Number.isInteger(n)) return new Error(`${name}: must be a whole number, got ${t}`);
    if (n < 0) return new Error(`${name}: must not be negative, got ${t}`);
    return n;
  }
  if (type === 'bool') {
    if (t === 'true' || t === 'false') return t === 'true';
    return new Error(`${name}: must be true or false, got "${t}"`);
  }
  if (spec?.options && !spec.options.includes(t)) return new Error(`${name}: must be one of ${spec.options.join(', ')}, got "${t}"`);
  return t;
}

function axisJson(kind: string, a: AxisEdit): unknown | Error {
  const spec = specOf(kind, a.param);
  const one = (text: string, what: string) => value(spec, `${a.param} ${what}`, text);
  /** A value every expansion runs (a list item, the first of a range): also within the agents' range. */
  const taken = (text: string, what: string) => {
    const v = one(text, what);
    const outside = spec && typeof v === 'number' ? rangeError({ ...spec, name: `${a.param} ${what}` }, v, text) : null;
    return outside ? new Error(outside) : v;
  };
  if (a.param === 'transport' || spec?.type === 'enum' || spec?.type === 'bool' || spec?.type === 'text' || a.form === 'list') {
    const items = a.list.split(/[\s,;]+/).filter(Boolean);
    if (!items.length) return new Error(`sweep ${a.param}: the list is empty`);
    const vals = items.map((t) => (a.param === 'transport' ? t : taken(t, 'list item')));
    return vals.find((v) => v instanceof Error) ?? vals;
  }
  if (a.form === 'range') {
    const [from, to, step] = [taken(a.from, 'from'), one(a.to, 'to'), one(a.step, 'step')];
    return [from, to, step].find((v) => v instanceof Error) ?? { from, to, step };
  }
  const [lo, hi, per] = [taken(a.lo, 'low'), one(a.hi, 'high'), Number(a.perOctave || '1')];
  if (lo instanceof Error) return lo;
  if (hi instanceof Error) return hi;
  return per > 1 ? { pow2: [lo, hi], per_octave: per } : { pow2: [lo, hi] };
}

/**
 * The fields of an either-or pair not chosen (sent never, shown never); a
 * swept field is always the chosen one.
 */
export function unpicked(p: typeof plan): Set<string> {
  const swept = new Set(p.axes.map((a) => a.param));
  const out = new Set<string>();
  for (const [alt, other] of alternatives(p.kind)) {
    const chosen = swept.has(alt) ? alt : swept.has(other) ? other : (p.picks[alt] ?? other);
    out.add(chosen === alt ? other : alt);
  }
  return out;
}

/** Why a plan cannot be built; `param` and `why` when one field is to blame (`why` without its name). */
export interface BuildError {
  error: string;
  param?: string;
  why?: string;
}

const fieldError = (param: string, message: string): BuildError => ({
  error: message,
  param,
  why: message.startsWith(`${param}: `) ? message.slice(param.length + 2) : message,
});

/**
 * The plan in the plan file format, or the reason it cannot be built. The
 * agents' limits are checked on every expanded step before the run, by the
 * step driver (run/run.svelte.ts: `check_steps`), not here.
 */
export function buildPlan(p: typeof plan): { plan: PlanJson } | BuildError {
  const swept = new Set(p.axes.map((a) => a.param));
  const left = unpicked(p);
  const params: Params = {};
  const specs = KINDS[p.kind].params;
  const hasBound = specs.some((s) => s.name === 'duration_s');
  let bound = p.bound;
  if (swept.has('duration_s')) bound = 'duration';
  if (swept.has('count')) bound = 'count';
  for (const s of specs) {
    const text = (p.values[s.name] ?? '').trim();
    if (swept.has(s.name) || left.has(s.name) || text === '') continue;
    if (hasBound && s.name === (bound === 'count' ? 'duration_s' : 'count')) continue;
    const v = value(s, s.name, text);
    if (v instanceof Error) return fieldError(s.name, v.message);
    const outside = typeof v === 'number' ? rangeError(s, v, text) : null;
    if (outside) return fieldError(s.name, outside);
    params[s.name] = v;
  }
  // An either-or field chosen and left empty ran at the other's default
  // (udp_stream by rate, empty: the 20 µs wait; issue 45, item 15).
  for (const [alt, other] of alternatives(p.kind)) {
    if (swept.has(alt) || swept.has(other) || (p.picks[alt] ?? other) !== alt || params[alt] != null) continue;
    const eg = specOf(p.kind, alt)?.type === 'rate' ? ', e.g. 20M' : '';
    return fieldError(alt, `${alt}: give the ${choiceName(alt)}${eg} (or choose ${choiceName(other)})`);
  }
  if (hasBound && bound === 'duration' && params.duration_s == null && !swept.has('duration_s'))
    return fieldError('duration_s', 'duration_s: give the test duration in seconds (or choose count)');
  const sweep: Record<string, unknown> = {};
  for (const a of p.axes) {
    const j = axisJson(p.kind, a);
    if (j instanceof Error) return { error: j.message };
    sweep[a.param] = j;
  }
  const repeat = Number(p.repeat);
  if (!Number.isInteger(repeat) || repeat < 1 || repeat > 1000) return { error: `repetitions must be a whole number from 1 to 1000, got ${p.repeat}` };
  const out: PlanJson = { kind: p.kind, params, sweep, repeat };
  if (p.name) out.name = p.name;
  if (p.description) out.description = p.description;
  if (p.histogram) out.histogram = { ...p.histogram };
  return { plan: out };
}

/** Loads a plan (a preset or an imported one) into the builder. */
export function loadPlan(j: PlanJson): void {
  setKind(KINDS[j.kind] ? j.kind : 'tcp_stream');
  const text = (name: string, v: unknown) => (specOf(plan.kind, name)?.type === 'size' ? sizeText(Number(v)) : String(v));
  // Only what the plan says: the agent's defaults fill the rest.
  const values: Record<string, string> = Object.fromEntries(Object.keys(plan.values).map((k) => [k, '']));
  for (const [k, v] of Object.entries(j.params ?? {})) values[k] = text(k, v);
  plan.values = values;
  const given = (name: string) => j.params?.[name] != null || (j.sweep != null && name in j.sweep);
  plan.bound = given('duration_s') ? 'duration' : 'count';
  for (const [alt, other] of alternatives(plan.kind)) plan.picks[alt] = given(alt) ? alt : other;
  plan.axes = Object.entries(j.sweep ?? {}).map(([param, s]) => {
    const a = newAxis(param);
    const spec = s as Record<string, unknown>;
    if (Array.isArray(s)) Object.assign(a, { form: 'list', list: s.map((v) => text(param, v)).join(', ') });
    else if (spec.pow2) {
      const [lo, hi] = spec.pow2 as number[];
      Object.assign(a, { form: 'pow2', lo: text(param, lo), hi: text(param, hi), perOctave: String(spec.per_octave ?? 1) });
    } else Object.assign(a, { form: 'range', from: text(param, spec.from), to: text(param, spec.to), step: text(param, spec.step) });
    return a;
  });
  plan.repeat = j.repeat ?? 1;
  plan.name = j.name ?? '';
  plan.description = j.description ?? '';
  plan.histogram = j.histogram ? { ...j.histogram } : null;
}
