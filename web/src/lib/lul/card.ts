// The summary card of a latency-under-load step, as protocol/src/lul_card.rs
// writes it (through the codec module's `lul_card`): figures with the JSON
// pointers into the step's summary they were read from.

import type { Codec } from '../wasm';

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
}
export interface Card {
  sections: { title: string; figures: CardFigure[] }[];
  clock: string;
  complete: boolean;
  note: string | null;
}

/** The card of a driving side's summary; throws with the module's message on another summary. */
export const cardOf = (codec: Pick<Codec, 'lul_card'>, summary: unknown): Card => JSON.parse(codec.lul_card(JSON.stringify(summary)));
