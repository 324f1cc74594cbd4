// The rate a stream step asked for and whether its sender reached it
// (udp_stream's `rate_reached`, docs/formats.md): the words `meshperf run`
// prints after `rate asked`.
import { formatRate } from '../units';

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
