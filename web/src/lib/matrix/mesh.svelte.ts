// The agents of a matrix (any number; the pair form's A and B are separate):
// added by the URL an agent prints (`http://HOST:PORT/#token=T`), a pasted
// list of them, or the fragment's `mesh=HOST:PORT@TOKEN,...`. Each is an
// `Agent` of its own (one WebSocket); they are named A, B, C... by position,
// as `meshperf run --matrix` names them. `dns:NAME[:PORT][#token=T]` adds an
// agent at every address of NAME, looked up by a connected agent (a browser
// cannot resolve records; in a cluster the agents' headless Service names
// them all), as `meshperf run --agent dns:NAME` does.

import { Agent, agents } from '../agents/agents.svelte';

class Mesh {
  list = $state<Agent[]>([]);
}
export const mesh = new Mesh();

/** The short name of agent `i`: A, B, ... Z, then A1, B1, ... (as the CLI's table). */
export function short(i: number): string {
  const letter = String.fromCharCode(65 + (i % 26));
  return i < 26 ? letter : `${letter}${Math.floor(i / 26)}`;
}

export interface Endpoint {
  host: string;
  token: string;
}

/**
 * One agent from what a user pastes: `http://HOST:PORT/#token=T` (the ready
 * line's URL), `HOST:PORT@TOKEN` (the fragment's form) or `HOST:PORT`.
 */
export function parseEndpoint(text: string): Endpoint {
  const t = text.trim();
  const url = /^(?:https?|wss?):\/\/([^/?#\s]+)[^#\s]*(?:#(\S*))?$/i.exec(t);
  if (url) return { host: url[1], token: new URLSearchParams(url[2] ?? '').get('token') ?? '' };
  const bare = /^([^\s@/#?]+)(?:@([^\s@]*))?$/.exec(t);
  if (bare) return { host: bare[1], token: bare[2] ?? '' };
  throw new Error(`"${t}" is not an agent address: paste the URL the agent prints (http://HOST:PORT/#token=T)`);
}

/** Agents in a pasted text: one per line (or separated by commas or spaces). */
export const parseEndpoints = (text: string): Endpoint[] => text.split(/[\s,]+/).filter(Boolean).map(parseEndpoint);

const sameHost = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

/** Adds and connects the agents in `text`; throws (adding none) on a bad or duplicate address. */
export function addAgents(text: string): void {
  const eps = parseEndpoints(text);
  if (!eps.length) throw new Error('paste the URL an agent prints (http://HOST:PORT/#token=T), one per line');
  eps.forEach((e, i) => {
    const before = mesh.list.findIndex((a) => sameHost(a.host, e.host));
    if (before >= 0) throw new Error(`${e.host} is already agent ${short(before)}: each agent once`);
    if (eps.findIndex((x) => sameHost(x.host, e.host)) < i) throw new Error(`${e.host} is listed twice: each agent once`);
  });
  for (const e of eps) {
    const a = new Agent(short(mesh.list.length));
    mesh.list.push(a);
    a.connect(e.host, e.token);
  }
  writeMesh();
}

/** Removes agent `i`; the agents after it move up a letter (and reconnect under their new name). */
export function removeAgent(i: number): void {
  const [gone] = mesh.list.splice(i, 1);
  gone?.close();
  for (let j = i; j < mesh.list.length; j++) {
    const old = mesh.list[j];
    const a = new Agent(short(j));
    old.close();
    mesh.list[j] = a;
    a.connect(old.host, old.token);
  }
  writeMesh();
}

/** The mesh's agents in a fragment value: `HOST:PORT,...` (their tokens stay out of the address bar). */
const meshValue = () => mesh.list.map((a) => a.host).join(',');

/** Where this tab's session keeps the matrix's tokens, by address. */
const TOKENS = 'meshperf.mesh';

function sessionTokens(): Record<string, string> {
  try {
    return JSON.parse(sessionStorage.getItem(TOKENS) ?? '{}') ?? {};
  } catch {
    return {};
  }
}

/**
 * Keeps `mesh=` in the fragment in step with the list (other keys kept) and
 * the tokens in this tab's session, so a reload reconnects while a copied
 * address carries no token.
 */
function writeMesh(): void {
  const p = new URLSearchParams(location.hash.replace(/^#/, ''));
  p.delete('mesh');
  const rest = p.toString();
  const value = mesh.list.length ? `mesh=${meshValue()}` : '';
  const hash = [rest, value].filter(Boolean).join('&');
  try {
    sessionStorage.setItem(TOKENS, JSON.stringify(Object.fromEntries(mesh.list.filter((a) => a.token).map((a) => [a.host.toLowerCase(), a.token]))));
  } catch {
    // Storage refused: a reload asks for the tokens again.
  }
  history.replaceState(null, '', hash ? `#${hash}` : location.pathname + location.search);
}

/** A `mesh=` value with each token it lacks taken from this tab's session (a reload's). */
export function withSessionTokens(value: string): string {
  const known = sessionTokens();
  return value
    .split(',')
    .filter(Boolean)
    .map((e) => (e.includes('@') || !known[e.toLowerCase()] ? e : `${e}@${known[e.toLowerCase()]}`))
    .join(',');
}

/**
 * An empty matrix starts with the pair form's connected agents (one each:
 * an agent that is both ends is listed once), so switching to the matrix
 * does not ask for agents the page already has.
 */
export function addPairAgents(): void {
  if (mesh.list.length) return;
  const ready = [agents.a, agents.b].filter((a) => a.state === 'ready');
  const distinct = ready.filter((a, i) => ready.findIndex((b) => sameHost(a.host, b.host)) === i);
  if (distinct.length) addAgents(distinct.map((a) => (a.token ? `${a.host}@${a.token}` : a.host)).join('\n'));
}

/** The agents the fragment's `mesh=` names ('' when none). */
export const meshInFragment = (hash: string): string => new URLSearchParams(hash.replace(/^#/, '')).get('mesh') ?? '';

/** `dns:NAME[:PORT][#token=T]`: a name to look up, the port (else the asking agent's) and token (else its). */
export function parseDnsName(text: string): { name: string; port: string; token: string } | null {
  const m = /^dns:(\[[^\]]+\]|[^:#\s]+)(?::(\d{1,5}))?(?:#(\S*))?$/i.exec(text.trim());
  if (!m) return null;
  return { name: m[1].replace(/^\[|\]$/g, ''), port: m[2] ?? '', token: new URLSearchParams(m[3] ?? '').get('token') ?? '' };
}

/** A connected agent to look names up through: the matrix's first ready one, else the pair form's. */
const resolver = (): Agent | undefined => [...mesh.list, agents.a, agents.b].find((a) => a.state === 'ready');

/**
 * Adds an agent at every address of `dns:NAME` (see parseDnsName), asked of a
 * connected agent; addresses already in the list are left out. Returns how
 * many were added; throws when no agent can ask or the name has no address.
 */
export async function addByName(text: string): Promise<number> {
  const q = parseDnsName(text);
  if (!q) throw new Error('expected dns:NAME[:PORT][#token=T], e.g. dns:meshperf.monitoring.svc:7800');
  const via = resolver();
  if (!via) throw new Error(`no connected agent to look up ${q.name} through: add one agent by its URL first`);
  const reply = await via.request({ type: 'resolve', name: q.name });
  const addresses = (reply.addresses ?? []) as string[];
  const port = q.port || (via.host.match(/:(\d+)$/)?.[1] ?? '7800');
  const token = q.token || via.token;
  const known = new Set(mesh.list.map((a) => a.host.toLowerCase()));
  const fresh = addresses.map((ip) => `${ip.includes(':') ? `[${ip}]` : ip}:${port}`).filter((h) => !known.has(h.toLowerCase()));
  if (fresh.length) addAgents(fresh.map((h) => `${h}@${token}`).join('\n'));
  return fresh.length;
}
