// `flows` of a tcp_rr or tcp_crr side's summary (present above one flow, see
// docs/formats.md): the words `meshperf run` prints, and each flow's rate.
import { fmt } from '../units';

export interface Flows {
  count: number;
  threads: number;
  min: number;
  median: number;
  max: number;
  per_flow?: number[] | null;
}

const num = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/**
 * `64 flows on 2 threads, transactions per flow 150 / 156 / 170 (min / median / max)`
 * (FlowFigures::text in protocol/src/summary.rs, which ends the side's line),
 * and on the driving side, which has the test's rate, each flow's
 * transactions per second: `; per flow per second 50 / 52 / 56.67`.
 * Null for one flow and for results from before flows.
 */
export function flowsLine(s: Record<string, any> | null | undefined): string | null {
  const f: Flows | undefined = s?.flows;
  if (!f || !num(f.count) || !num(f.min) || !num(f.median) || !num(f.max)) return null;
  const line = `${f.count} flows on ${f.threads} thread${f.threads === 1 ? '' : 's'}, transactions per flow ${f.min} / ${f.median} / ${f.max} (min / median / max)`;
  // The test's time, from its total and rate (tcp_rr counts in `count`, tcp_crr in `transactions`).
  const total = num(s!.transactions) ? s!.transactions : s!.count;
  const rate = s!.transactions_per_second;
  if (!num(total) || !num(rate) || total <= 0 || rate <= 0) return line;
  const secs = total / rate;
  return `${line}; per flow per second ${fmt(f.min / secs)} / ${fmt(f.median / secs)} / ${fmt(f.max / secs)}`;
}
