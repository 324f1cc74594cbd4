// The preset plans, one per seed tool: the wasm module's `presets()` when the
// build has it, else the same plans/*.json files the agent compiles in.

import type { PlanJson } from './plan.svelte';
import type { Stats } from '../wasm';

const files = import.meta.glob<PlanJson>('../../../../plans/*.json', { eager: true, import: 'default' });

export interface Preset {
  name: string;
  plan: PlanJson;
}

export function presetList(wasm: Stats | null): Preset[] {
  if (wasm?.presets) {
    try {
      return (JSON.parse(wasm.presets()) as { name: string; plan: PlanJson | string }[]).map((p) => ({
        name: p.name,
        plan: typeof p.plan === 'string' ? JSON.parse(p.plan) : p.plan,
      }));
    } catch {
      // fall through to the files
    }
  }
  return Object.values(files)
    .map((plan) => ({ name: plan.name ?? '?', plan }))
    .sort((a, b) => a.name.localeCompare(b.name));
}
