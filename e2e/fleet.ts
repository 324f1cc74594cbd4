// A fleet's matrix for the page to read (tests/fleet.spec.ts, and the
// bench's bench/fleet1000.bench.ts): the result file a monitor serves at
// /matrix.json (`meshperf run --matrix --json`'s format), here of N agents
// on 127.1.x.y written by this generator, since 1000 real agents (about 6 MB
// each) do not fit beside the rest of the suite. Each step carries what a
// matrix cell reads (pair, kind, the summary's rtt_us); the page fills in
// the rest (result.ts parseResult) as it does for any file. Known figures:
// every pair's median round trip is 40 + (31 c + 17 s) mod 20 us, but
// SLOW's pairs either way, which are 400 + (the peer mod 50) us; FAIL's
// tests as the driver of FAIL_PEERS failed.
import { closeSync, openSync, writeSync } from 'node:fs';

export const SLOW = 737;
export const FAIL = 421;
export const FAIL_PEERS = [100, 200, 300];

export const host = (i: number) => `node-${String(i).padStart(4, '0')}`;
export const endpoint = (i: number) => `127.1.${i >> 8}.${i & 255}:7800`;

/** The median round-trip time of pair client -> server, in us (null: the pair failed). */
export function median(client: number, server: number): number | null {
  if (client === FAIL && FAIL_PEERS.includes(server)) return null;
  if (client === SLOW) return 400 + (server % 50);
  if (server === SLOW) return 400 + (client % 50);
  return 40 + ((31 * client + 17 * server) % 20);
}

/** Writes the n-agent udp_rr matrix to `file` (a step per ordered pair, each pair's figure from `fig`); returns its size in bytes. */
export function writeFleet(file: string, n: number, fig: (client: number, server: number) => number | null = median): number {
  const fd = openSync(file, 'w');
  let bytes = 0;
  const put = (s: string) => (bytes += writeSync(fd, s));
  try {
    const agents = Array.from({ length: n }, (_, i) => ({ protocol: 1, version: '0.1.0', hostname: host(i), endpoint: endpoint(i) }));
    put(`{"format":"meshperf-result","version":1,"created_unix":1796000000,"plan":{"kind":"udp_rr","params":{"count":200}},`);
    put(`"agents":${JSON.stringify(agents)},"steps":[`);
    let index = 0;
    for (let server = 0; server < n; server++) {
      const chunk: string[] = [];
      for (let client = 0; client < n; client++) {
        if (client === server) continue;
        const m = fig(client, server);
        const pair = `"pair":{"server":${server},"client":${client}}`;
        chunk.push(
          m == null
            ? `{"index":${index},"kind":"udp_rr","params":{"count":200},${pair},"summary":null,"error":"no answer within 1000 ms"}`
            : `{"index":${index},"kind":"udp_rr","params":{"count":200},${pair},"summary":{"count":200,"rtt_us":{"n":200,"median":${m},"p99":${m * 3}}}}`,
        );
        index += 1;
      }
      put((server ? ',' : '') + chunk.join(','));
    }
    put(']}\n');
  } finally {
    closeSync(fd);
  }
  return bytes;
}

/**
 * The agents worst first, computed here from the figures above (failed
 * pairs either way first, then the largest median either way, ties in
 * list order): what the page's "worst first" order must begin with.
 */
export function worstFirst(n: number): number[] {
  const failed = new Array(n).fill(0);
  const worst = new Array(n).fill(-Infinity);
  for (let c = 0; c < n; c++) {
    for (let s = 0; s < n; s++) {
      if (c === s) continue;
      const m = median(c, s);
      for (const a of [c, s]) {
        if (m == null) failed[a] += 1;
        else worst[a] = Math.max(worst[a], m);
      }
    }
  }
  return Array.from({ length: n }, (_, i) => i).sort((a, b) => failed[b] - failed[a] || worst[b] - worst[a] || a - b);
}

/**
 * Records every long task from the page's start (PerformanceObserver
 * 'longtask', Chromium), with its start time, in window.longTasks.
 */
export const recordLongTasks = () => {
  const w = window as unknown as { longTasks: { start: number; ms: number }[] };
  w.longTasks = [];
  new PerformanceObserver((l) => l.getEntries().forEach((e) => w.longTasks.push({ start: e.startTime, ms: e.duration }))).observe({ type: 'longtask', buffered: true });
};
