// The summary card of a latency-under-load step, as protocol/src/lul_card.rs
// writes it (through the codec module's `lul_card`): figures with the JSON
// pointers into the step's summary they were read from.

import type { View } from '../wasm';
import { fmt, formatRate, formatUs, timeUnit } from '../units';

export interface CardFigure {
  key: string;
  label: string;
  from: string[];
  div: number;
  value: number | null;
  unit: string;
  text: string;
  basis: 'tcp' | 'rtt' | 'estimated' | 'synced' | 'count';
  uncertain: boolean;
  /** An added delay within its uncertainty, or below zero: that uncertainty in `unit`; `text` reads `none (±U)`. */
  none_within?: number | null;
}
/** The grade and sentence of a step (protocol/src/verdict.rs): the CLI prints the same words. */
export interface Verdict {
  grade: string;
  sentence: string;
  phases: { phase: string; added_ms: number; uncertainty_ms: number; none: boolean; up_ms: number | null; down_ms: number | null; grade: string }[];
}
export interface Card {
  verdict: Verdict;
  sections: { title: string; figures: CardFigure[] }[];
  clock: string;
  complete: boolean;
  note: string | null;
}

/** The card of a driving side's summary; throws with the module's message on another summary. */
export const cardOf = (codec: Pick<View, 'lul_card'>, summary: unknown): Card => JSON.parse(codec.lul_card(JSON.stringify(summary)));

/**
 * A figure as the page shows it, number and unit apart: rates and times in
 * the page's units (units.ts: `28.05 Gbit/s`, `850 µs`, `12.1 ms`), as
 * every other figure on the page reads. `text` is the CLI's cell (Mbit/s
 * and ms at fixed precision, `meshperf run`'s table): `<±U` and `none (±U)`
 * keep their rules, U shown in the page's unit; counts and missing values
 * as `text` says.
 */
export function shown(f: Pick<CardFigure, 'value' | 'unit' | 'text' | 'uncertain' | 'none_within'>): { num: string; unit: string } {
  const split = (t: string) => {
    const at = t.lastIndexOf(' ');
    return { num: t.slice(0, at), unit: t.slice(at + 1) };
  };
  if (f.value == null) return { num: f.text, unit: '' };
  if (f.unit === 'Mbit/s') return split(formatRate(f.value * 1e6));
  if (f.unit === 'ms') {
    // An added delay within its uncertainty, or below zero: no figure (protocol/src/verdict.rs).
    // U to 2 significant digits, beside "none" as its unit is beside a figure: the card's columns stay one line.
    if (f.none_within != null) {
      const us = f.none_within * 1e3;
      const u = timeUnit(us);
      return { num: 'none', unit: `(±${fmt(us / u.div, 2)} ${u.unit})` };
    }
    if (f.uncertain && f.text.startsWith('<±')) {
      const u = split(formatUs(Number(f.text.slice(2)) * 1e3));
      return { num: `<±${u.num}`, unit: u.unit };
    }
    return split(formatUs(f.value * 1e3));
  }
  return { num: f.text, unit: f.unit === 'probes' ? '' : f.unit };
}
