// Finished runs kept in the browser: one IndexedDB object store, plain API.
// Each record is {id, label, saved, result}; results are stored whole.

import type { RunResult } from '../result/result';

export interface StoredRun {
  id: number;
  label: string;
  saved: number;
  result: RunResult;
}

const DB = 'meshperf';
const STORE = 'runs';

let opening: Promise<IDBDatabase> | null = null;

function db(): Promise<IDBDatabase> {
  opening ??= new Promise((resolve, reject) => {
    const req = indexedDB.open(DB, 1);
    req.onupgradeneeded = () => req.result.createObjectStore(STORE, { keyPath: 'id', autoIncrement: true });
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(new Error(`cannot open the browser's run store: ${req.error?.message}`));
  });
  opening.catch(() => (opening = null));
  return opening;
}

function call<T>(mode: IDBTransactionMode, f: (s: IDBObjectStore) => IDBRequest): Promise<T> {
  return db().then(
    (d) =>
      new Promise<T>((resolve, reject) => {
        const req = f(d.transaction(STORE, mode).objectStore(STORE));
        req.onsuccess = () => resolve(req.result as T);
        req.onerror = () => reject(new Error(`run store: ${req.error?.message}`));
      }),
  );
}

/** Saves a run; resolves with its id. */
export const saveRun = (label: string, result: RunResult): Promise<number> =>
  call('readwrite', (s) => s.add({ label, saved: Date.now(), result }));

export const listRuns = (): Promise<StoredRun[]> => call('readonly', (s) => s.getAll());

export const deleteRun = (id: number): Promise<void> => call('readwrite', (s) => s.delete(id));
