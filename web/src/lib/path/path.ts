// One `path` step as the page shows it: the two directions side by side per
// hop (the driving agent's trace `forth`, the serving agent's `back`, from
// the driving side's summary: protocol/src/summary/path.rs), each hop's
// round trips as a five-number box (the statistics module's quartiles, as
// every other figure on the page), the differences between the directions
// named, and the marks each way in one table. `meshperf run` prints the
// same hops side by side (agent/src/run/path_out.rs).

import type { Stats } from '../wasm';

/** Round trips of one hop's answered probes: min, quartiles, median, max (us). */
export interface Box {
  n: number;
  min: number;
  q1: number;
  median: number;
  q3: number;
  max: number;
}

/** One direction at one TTL. */
export interface HopCell {
  /** Who answered (`*` when none did), and others at this TTL. */
  who: string;
  /** The answering address's name, where the test asked for names and the agent found one. */
  name: string | null;
  also: string[];
  peer: boolean;
  silent: boolean;
  sent: number;
  lost: number;
  box: Box | null;
  /** The next-hop MTU the hop reported. */
  mtu: number | null;
  note: string | null;
}

/** One TTL both ways; `differs`: what differs between the two directions there. */
export interface HopRow {
  ttl: number;
  forth: HopCell | null;
  back: HopCell | null;
  differs: string[];
}

/** What arrived of one mark one way. */
export interface MarkCell {
  verdict: string;
  got: string;
  received: number;
  sent: number;
  at: string;
}

export interface MarkRow {
  dscp: number;
  ecn: number;
  forth: MarkCell | null;
  back: MarkCell | null;
  /** Not kept one way or the other, or not the same both ways. */
  differs: boolean;
}

export interface PathShow {
  rows: HopRow[];
  marks: MarkRow[];
  /** The directions' differences in words: hop counts, ends, path MTU, marks. */
  differences: string[];
  /** How each trace ended and its path MTU, in words: [forth, back]. */
  ends: [string, string];
  mtus: [string | null, string | null];
  /** The largest round trip of any hop either way (the boxes' common scale), us. */
  rttMax: number;
}

type Dir = Record<string, any>;
const ECN = ['Not-ECT', 'ECT(1)', 'ECT(0)', 'CE'];
export const ecnName = (e: number): string => ECN[e] ?? String(e);

function box(stats: Pick<Stats, 'SampleSet'>, rtt: unknown): Box | null {
  const v = Array.isArray(rtt) ? rtt.filter((x): x is number => typeof x === 'number' && Number.isFinite(x)) : [];
  if (!v.length) return null;
  const set = new stats.SampleSet();
  try {
    set.push(Float64Array.from(v));
    const s = set.summary();
    return { n: s.n, min: s.min, q1: s.iq25, median: s.median, q3: s.iq75, max: s.max };
  } finally {
    set.free();
  }
}

function cell(stats: Pick<Stats, 'SampleSet'>, h: Dir): HopCell {
  const sent = Number(h.sent ?? 0);
  return {
    who: typeof h.addr === 'string' ? h.addr : '*',
    name: typeof h.name === 'string' && typeof h.addr === 'string' ? h.name : null,
    also: Array.isArray(h.also) ? h.also.map(String) : [],
    peer: !!h.peer,
    silent: !!h.silent,
    sent,
    lost: sent - Number(h.answered ?? 0),
    box: box(stats, h.rtt_us),
    mtu: typeof h.mtu === 'number' ? h.mtu : null,
    note: typeof h.note === 'string' ? h.note : null,
  };
}

/** How a trace ended, in words (path_out.rs `end`). */
export function endOf(d: Dir): string {
  const hops: Dir[] = Array.isArray(d?.hops) ? d.hops : [];
  switch (d?.end) {
    case 'peer':
      return `peer at hop ${d.peer_hop}`;
    case 'max_hops':
      return `max hops reached (${hops.at(-1)?.ttl ?? 0}) before the peer`;
    case 'silence':
      return `ended in silence after hop ${[...hops].reverse().find((h) => !h.silent)?.ttl ?? 0}: nothing past it answered`;
    case 'unreachable':
      return 'a hop said the peer is unreachable';
    case 'time_limit':
      return "stopped at the agent's duration limit";
    default:
      return String(d?.end ?? 'no trace');
  }
}

/** The largest IP datagram (its 16-bit total length). */
const IP_MAX = 65535;

/** The path MTU in words (path_out.rs `mtu_line`), or null without a search. */
export function mtuOf(d: Dir): string | null {
  const m = d?.mtu;
  if (!m) return null;
  // An IP datagram holds at most 65535 bytes: an interface with a larger
  // MTU (lo's 65536) reads as that, not as 65535 beside a link row of 65536
  // (issue 45, item 13).
  const local = Number(m.local) >= IP_MAX ? `${m.local} or more: an IP datagram holds at most ${IP_MAX}` : m.local;
  let s = `${m.bytes ?? '–'} bytes (interface ${local})`;
  if (m.lowered_by) s += `, lowered at ${m.lowered_at != null ? `hop ${m.lowered_at}` : 'a hop'} (${m.lowered_by})`;
  if (m.black_hole_above != null)
    s += `; black hole: datagrams above ${m.black_hole_above} bytes vanish with no ICMP ${m.black_hole_after != null ? `after hop ${m.black_hole_after}` : 'somewhere on the path'}`;
  return s;
}

function markCell(m: Dir): MarkCell {
  const got = m.got_dscp != null ? `DSCP ${m.got_dscp} ${ecnName(m.got_ecn)}` : '–';
  const at = m.changed_at != null ? `hop ${m.changed_at}${m.changed_by ? ` (${m.changed_by})` : ''}` : '';
  return { verdict: String(m.verdict), got, received: Number(m.received ?? 0), sent: Number(m.sent ?? 0), at };
}

const verdictWords = (c: MarkCell | null) => (c ? (c.verdict === 'rewritten' ? `rewritten to ${c.got}` : c.verdict.replace('_', ' ')) : 'not sent');

/** The page's view of a driving side's `path` summary; null when it is not one. */
export function pathShow(stats: Pick<Stats, 'SampleSet'>, summary: Dir | null | undefined): PathShow | null {
  const f: Dir | undefined = summary?.forth;
  const b: Dir | undefined = summary?.back;
  if (!f || !b || !Array.isArray(f.hops) || !Array.isArray(b.hops)) return null;
  const byTtl = (d: Dir) => new Map<number, Dir>(d.hops.map((h: Dir) => [Number(h.ttl), h]));
  const [fm, bm] = [byTtl(f), byTtl(b)];
  const ttls = [...new Set([...fm.keys(), ...bm.keys()])].sort((x, y) => x - y);
  let rttMax = 0;
  const rows = ttls.map((ttl): HopRow => {
    const fh = fm.get(ttl);
    const bh = bm.get(ttl);
    const [fc, bc] = [fh ? cell(stats, fh) : null, bh ? cell(stats, bh) : null];
    for (const c of [fc, bc]) if (c?.box) rttMax = Math.max(rttMax, c.box.max);
    const differs: string[] = [];
    if (!fc || !bc) differs.push(fc ? 'a hop forth only' : 'a hop back only');
    else {
      if (fc.peer !== bc.peer) differs.push(fc.peer ? 'the peer forth, a router back' : 'a router forth, the peer back');
      if (fc.silent !== bc.silent) differs.push(`silent ${fc.silent ? 'forth' : 'back'} only`);
      if (fc.mtu !== bc.mtu) differs.push(`MTU ${fc.mtu ?? '–'} forth, ${bc.mtu ?? '–'} back`);
    }
    return { ttl, forth: fc, back: bc, differs };
  });
  const marks = new Map<string, MarkRow>();
  for (const [dir, d] of [['forth', f], ['back', b]] as const) {
    for (const m of Array.isArray(d.marks) ? d.marks : []) {
      const key = `${m.dscp}/${m.ecn}`;
      const row = marks.get(key) ?? { dscp: Number(m.dscp), ecn: Number(m.ecn), forth: null, back: null, differs: false };
      row[dir] = markCell(m);
      marks.set(key, row);
    }
  }
  const markRows = [...marks.values()];
  for (const r of markRows) r.differs = r.forth?.verdict !== 'kept' || r.back?.verdict !== 'kept' || r.forth.got !== r.back.got;
  const differences: string[] = [];
  const hopsOf = (d: Dir) => (d.peer_hop != null ? `${d.peer_hop} hops` : endOf(d));
  if (summary?.asymmetric || f.end !== b.end) differences.push(`The routes differ: ${hopsOf(f)} forth, ${hopsOf(b)} back.`);
  const [mf, mb] = [f.mtu?.bytes ?? null, b.mtu?.bytes ?? null];
  if ((f.mtu || b.mtu) && mf !== mb) differences.push(`The path MTU differs: ${mf ?? '–'} bytes forth, ${mb ?? '–'} back.`);
  for (const r of markRows) {
    if (r.forth?.verdict === r.back?.verdict && r.forth?.got === r.back?.got) continue;
    differences.push(`DSCP ${r.dscp} ${ecnName(r.ecn)}: ${verdictWords(r.forth)} forth, ${verdictWords(r.back)} back.`);
  }
  return { rows, marks: markRows, differences, ends: [endOf(f), endOf(b)], mtus: [mtuOf(f), mtuOf(b)], rttMax };
}
