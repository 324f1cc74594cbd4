// The fleet the page shows from a file (an imported result of FLEET_FROM
// agents or more, e.g. a monitor's /matrix.json): read in fleet.worker.ts,
// off the page's thread; the page holds only its cells as typed arrays.
// It is not kept in the browser's stored runs (a million steps).

import type { FleetAnswer, FleetData } from './fleet';

/** Files up to this size are imported as always, on the page (result.ts parseResult); larger ones are read in the worker. */
export const WORKER_FROM_BYTES = 4 << 20;

class FleetFile {
  data = $state.raw<FleetData | null>(null);
  /** The file's name. */
  name = $state('');
  /** Reading a file, or another figure of it. */
  busy = $state(false);
  error = $state('');
}
export const fleet = new FleetFile();

let worker: Worker | null = null;
let next = 0;
const waiting = new Map<number, (a: FleetAnswer) => void>();

function ask(msg: { file: File } | { url: string } | { metric: string }): Promise<FleetAnswer> {
  worker ??= new Worker(new URL('./fleet.worker.ts', import.meta.url), { type: 'module' });
  worker.onmessage = (e: MessageEvent<FleetAnswer>) => {
    waiting.get(e.data.id)?.(e.data);
    waiting.delete(e.data.id);
  };
  worker.onerror = (e) => {
    for (const done of waiting.values()) done({ id: -1, error: e.message || 'the file reader stopped' });
    waiting.clear();
  };
  const id = ++next;
  return new Promise((resolve) => {
    waiting.set(id, resolve);
    worker!.postMessage({ id, ...msg });
  });
}

/**
 * Reads `file` in the worker: a fleet's matrix is shown as one (null);
 * any other file comes back as its text, for the usual import.
 */
export async function readLarge(file: File): Promise<string | null> {
  fleet.busy = true;
  try {
    const a = await ask({ file });
    if ('error' in a) throw new Error(a.error);
    if ('text' in a) return a.text;
    Object.assign(fleet, { data: a.fleet, name: file.name, error: '' });
    return null;
  } finally {
    fleet.busy = false;
  }
}

/**
 * Reads the matrix at `url` (`#matrix=URL`: a monitor's /matrix.json, either
 * form, which its /matrix sends a browser to for a fleet) in the worker: a
 * fleet is shown as one (null); another result comes back as its text.
 */
export async function readUrl(url: string): Promise<string | null> {
  fleet.busy = true;
  try {
    const a = await ask({ url });
    if ('error' in a) throw new Error(a.error);
    if ('text' in a) return a.text;
    Object.assign(fleet, { data: a.fleet, name: url, error: '' });
    return null;
  } finally {
    fleet.busy = false;
  }
}

/** The cells of figure `metric` of the fleet's file. */
export async function fleetMetric(metric: string): Promise<void> {
  if (!fleet.data || metric === fleet.data.metric) return;
  fleet.busy = true;
  try {
    const a = await ask({ metric });
    if ('fleet' in a) Object.assign(fleet, { data: a.fleet, error: '' });
    else if ('error' in a) fleet.error = a.error;
  } finally {
    fleet.busy = false;
  }
}

/** Stops showing the fleet and lets the worker go (and the result it holds). */
export function closeFleet(): void {
  Object.assign(fleet, { data: null, name: '', error: '' });
  worker?.terminate();
  worker = null;
}
