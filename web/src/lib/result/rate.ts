// The rate a stream step asked for and whether its sender reached it
// (udp_stream's `rate_reached`, docs/formats.md): the words `meshperf run`
// prints after `rate asked`.
import { formatBytes, formatRate } from '../units';

const num = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/**
 * `1 Tbit/s: not reached, the sender managed 4.21 Gbit/s`, `20 Mbit/s:
 * reached`, or the rate alone where the summary does not say (tcp_stream,
 * results from before `rate_reached`); null without a rate.
 */
export function rateAsked(s: Record<string, any> | null | undefined): string | null {
  if (!s || !num(s.rate)) return null;
  if (s.rate_reached === false && num(s.send_bits_per_second)) {
    return `${formatRate(s.rate)}: not reached, the sender managed ${formatRate(s.send_bits_per_second)}`;
  }
  return s.rate_reached === true ? `${formatRate(s.rate)}: reached` : formatRate(s.rate);
}

/** A share as a percentage with 3 significant digits (`0.501%`, `39.9%`, `0%`), as `meshperf run` prints it. */
export function share(x: number): string {
  const pct = x * 100;
  if (pct === 0) return '0%';
  const decimals = Math.min(6, Math.max(0, 2 - Math.floor(Math.log10(Math.abs(pct)))));
  return `${pct.toFixed(decimals)}%`;
}

/** `178,474 of 447,457 (39.9%)`: datagrams lost of those sent (iperf3's Lost/Total); null without both counts. */
export function lostOfSent(s: Record<string, any> | null | undefined): string | null {
  if (!s || !num(s.lost) || !num(s.sent) || s.sent <= 0) return null;
  return `${formatBytes(s.lost)} of ${formatBytes(s.sent)} (${share(s.lost / s.sent)})`;
}
