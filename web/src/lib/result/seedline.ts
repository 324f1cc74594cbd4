// A side's `line` when it is a seed's record (udp_req_timo's and tcp_req's
// for the request/response kinds, udp_bw_mon's quiet-mode record for
// udp_stream): its `; `-separated values under the seed's own field names
// (protocol/src/seedline.rs, exported into generated/params.ts), as
// `meshperf run` prints the heading above its records.

import { SEED_HEADINGS } from '../generated/params';

/** The record's names and values, or null when the line is prose (a responder's) or the kind has no seed record. */
export function seedRecord(kind: string, line: string | null | undefined): { names: string[]; values: string[] } | null {
  const heading = SEED_HEADINGS[kind];
  if (!heading || !line) return null;
  const names = heading.split('; ');
  const values = line.split(';').map((v) => v.trim());
  return values.length === names.length ? { names, values } : null;
}
