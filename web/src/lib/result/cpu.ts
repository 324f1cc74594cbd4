// A side's CPU use, the `cpu` object every side's summary carries (see
// docs/formats.md): the same words as `meshperf run`'s `cpu:` lines.

export interface Cpu {
  seconds: number;
  user_seconds: number;
  system_seconds: number;
  threads: number;
  percent: number;
  host_percent?: number | null;
  host_user_percent?: number | null;
  host_system_percent?: number | null;
  host_cpus: number;
}

const num = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/** The side's threads: `12.3% of a CPU (user 0.041 s, system 0.082 s, 3 threads, 1.001 s)`. */
export function cpuThreads(c: Cpu | null | undefined): string | null {
  if (!c || !num(c.percent)) return null;
  const t = `${c.threads} thread${c.threads === 1 ? '' : 's'}`;
  return `${c.percent.toFixed(1)}% of a CPU (user ${c.user_seconds.toFixed(3)} s, system ${c.system_seconds.toFixed(3)} s, ${t}, ${c.seconds.toFixed(3)} s)`;
}

/** The whole host over the same interval: `48.1% of 2 CPUs (user 10.0%, system 38.1%)`. */
export function cpuHost(c: Cpu | null | undefined): string | null {
  if (!c || !num(c.host_percent)) return null;
  const part = (name: string, v: unknown) => (num(v) ? `${name} ${v.toFixed(1)}%` : null);
  const parts = [part('user', c.host_user_percent), part('system', c.host_system_percent)].filter((p) => p);
  return `${c.host_percent.toFixed(1)}% of ${c.host_cpus} CPUs${parts.length ? ` (${parts.join(', ')})` : ''}`;
}

/**
 * A side that sent with `zerocopy`, as `meshperf run`'s `zerocopy:` line:
 * `8192 sends with MSG_ZEROCOPY, 0 zero-copy, 8192 copied by the kernel;
 * 0.412 CPU s per GB sent`; null for a side without zero-copy sends (and
 * results from before them).
 */
export function zeroCopy(s: Record<string, any> | null | undefined): string | null {
  if (!s || !num(s.zerocopy_sends)) return null;
  let t = `${s.zerocopy_sends} sends with MSG_ZEROCOPY, ${s.zerocopy_zero_copied ?? 0} zero-copy, ${s.zerocopy_copied ?? 0} copied by the kernel`;
  if (num(s.zerocopy_enobufs) && s.zerocopy_enobufs > 0) t += ` (${s.zerocopy_enobufs} made again after ENOBUFS)`;
  const c = s.cpu;
  if (c && num(c.user_seconds) && num(c.system_seconds) && num(s.sent_bytes) && s.sent_bytes > 0) {
    t += `; ${((c.user_seconds + c.system_seconds) / (s.sent_bytes / 1e9)).toFixed(3)} CPU s per GB sent`;
  }
  return t;
}
