// The Standard test's quick length: the bufferbloat preset with every phase
// 1 s, and its description saying those lengths, not the preset's (issue 45,
// item 22: "7 s each" stood over a quick run).

/** Phase lengths of the quick version (s), gaps included. */
export const QUICK = { idle_s: 1, download_s: 1, upload_s: 1, both_s: 1, gap_s: 0.25 };

/** `description` with the preset's phase lengths replaced by the quick ones. */
export function quickDescription(description: string | undefined): string {
  const d = description ?? '';
  const num = String.raw`\d+(?:\.\d+)?`;
  const lengths = new RegExp(String.raw`${num} s idle, then ${num} s each`);
  const gaps = new RegExp(String.raw`${num} s gaps`);
  if (!lengths.test(d)) return `${d} (quick: every phase 1 s, ${QUICK.gap_s} s gaps)`.trim();
  return `${d.replace(lengths, `${QUICK.idle_s} s idle, then ${QUICK.download_s} s each`).replace(gaps, `${QUICK.gap_s} s gaps`)} (quick)`;
}
