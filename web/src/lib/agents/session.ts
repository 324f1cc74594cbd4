// The pair's tokens for this tab's session. Once the page has connected with
// them they leave the address bar (visible in screen shares and history) and
// wait in sessionStorage, which a reload of the same tab still reads and a
// new tab, another browser or a copied link does not.

import { withoutTokens, type Endpoint, type Endpoints } from './fragment';

const KEY = 'meshperf.pair';

type Pair = Omit<Endpoints, 'given'>;

function stored(): Pair | null {
  try {
    const v = JSON.parse(sessionStorage.getItem(KEY) ?? 'null');
    return v?.a && v?.b ? (v as Pair) : null;
  } catch {
    return null;
  }
}

/**
 * The endpoints to start from: the fragment's, with a token it lacks taken
 * from this session for the same address; the session's alone when the
 * fragment names no agent.
 */
export function withSession(e: Endpoints): Endpoints {
  const s = stored();
  if (!s) return e;
  if (!e.given) return { ...s, given: true };
  const fill = (x: Endpoint, y: Endpoint): Endpoint => (!x.token && x.host === y.host ? { ...x, token: y.token } : x);
  return { a: fill(e.a, s.a), b: fill(fill(e.b, s.b), s.a), given: true };
}

/** Keeps the pair for this session and takes the tokens out of the address bar. */
export function keepForSession(e: Pair): void {
  try {
    sessionStorage.setItem(KEY, JSON.stringify({ a: e.a, b: e.b }));
  } catch {
    // Storage refused (a private window's quota): the tokens still leave the
    // address bar; a reload then asks for them again.
  }
  const hash = withoutTokens(location.hash);
  if (hash !== location.hash) history.replaceState(history.state, '', location.pathname + location.search + hash);
}
