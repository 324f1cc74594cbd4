// The runs kept in IndexedDB, which of them are overlaid, and the result the
// page is showing: a live run, an imported file, a permalink or a stored run.

import { runLabel, typedSamples, type RunResult } from '../result/result';
import { deleteRun, listRuns, saveRun, type StoredRun } from './store';

export type Source = 'run' | 'import' | 'link' | 'stored';

class ViewState {
  result = $state.raw<RunResult | null>(null);
  source = $state<Source>('run');
  /** Selected step index. */
  step = $state(0);
  /** The stored id of the shown result, once saved. */
  storedId = $state<number | null>(null);
}
export const view = new ViewState();

class RunsState {
  list = $state.raw<StoredRun[]>([]);
  selected = $state<number[]>([]);
  error = $state('');
}
export const runs = new RunsState();

export function show(r: RunResult, source: Source, storedId: number | null = null): void {
  view.result = r;
  view.source = source;
  view.storedId = storedId;
  view.step = Math.max(0, r.steps.length - 1);
}

export async function refresh(): Promise<void> {
  try {
    // Runs stored before samples were kept typed hold plain arrays.
    runs.list = (await listRuns()).map((s) => (typedSamples(s.result), s)).sort((a, b) => b.saved - a.saved);
    runs.error = '';
  } catch (e) {
    runs.error = (e as Error).message;
  }
}

/** What a stored run's label adds for where it came from (a run of this page adds nothing). */
const FROM: Record<Source, string> = { run: '', stored: '', import: ' · imported', link: ' · opened from a link' };

/**
 * Stores a result and (unless `overlay` is false) selects it for the
 * overlay; resolves with its id. `source`: where it came from, said in its
 * label (a run opened from a link is otherwise labelled as its original).
 */
export async function keep(r: RunResult, overlay = true, source: Source = 'run'): Promise<number | null> {
  try {
    // Results are never reactive proxies ($state.raw everywhere), so the
    // store clones `r` itself; a snapshot would copy every sample once more.
    const id = await saveRun(runLabel(r) + FROM[source], r);
    await refresh();
    if (overlay && !runs.selected.includes(id)) runs.selected.push(id);
    if (view.result === r) view.storedId = id;
    return id;
  } catch (e) {
    runs.error = (e as Error).message;
    return null;
  }
}

export async function remove(id: number): Promise<void> {
  try {
    await deleteRun(id);
    runs.selected = runs.selected.filter((x) => x !== id);
    if (view.storedId === id) view.storedId = null;
    await refresh();
  } catch (e) {
    runs.error = (e as Error).message;
  }
}

/** A stored run's name in lists and comparisons: its number in the store tells two of the same label apart. */
export const storedLabel = (r: Pick<StoredRun, 'id' | 'label'>): string => `#${r.id} ${r.label}`;

/** The runs ticked for the overlay, as the comparison plots them, oldest first (the first is the baseline). */
export const overlaid = (): { label: string; result: RunResult }[] =>
  runs.list
    .filter((r) => runs.selected.includes(r.id))
    .sort((a, b) => a.id - b.id)
    .map((r) => ({ label: storedLabel(r), result: r.result }));

export function toggle(id: number): void {
  const i = runs.selected.indexOf(id);
  if (i >= 0) runs.selected.splice(i, 1);
  else runs.selected.push(id);
}
