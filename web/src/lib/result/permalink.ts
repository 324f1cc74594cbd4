// Opening a permalink: the fragment's `r=` text goes to the wasm module's
// `permalink_decode` (the codec module, loaded now), which upgrades old versions and throws with a clear
// message on a truncated or corrupt link.

import { parseResult, type RunResult } from './result';
import { loadView } from '../wasm';

export async function openPermalink(text: string): Promise<RunResult> {
  const wasm = await loadView().catch((e: Error) => {
    throw new Error(`cannot open the result in this link: ${e.message}`);
  });
  if (!wasm.permalink_decode) throw new Error('cannot open the result in this link: this build of the page has no permalink decoder yet (wasm permalink_decode): rebuild it with scripts/build.sh');
  if (!text) throw new Error('the link carries no result (nothing after r=): copy the whole link again');
  let json: string;
  try {
    json = wasm.permalink_decode(text);
  } catch (e) {
    throw new Error(`this link's result cannot be read (${(e as Error).message}); it was probably cut short: copy the whole link again`);
  }
  return parseResult(json);
}
