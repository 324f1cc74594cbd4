// The URL fragment: `#token=TA&agent2=HOST:PORT&token2=TB[&agent=HOST:PORT]`
// (a matrix's agents are `mesh=`: matrix/mesh.svelte.ts).
// The fragment never reaches a server; tokens leave the page only in `auth`.

export interface Endpoints {
  a: { host: string; token: string };
  b: { host: string; token: string };
  /** True when the fragment named anything, so the page may connect at once. */
  given: boolean;
}

export function readFragment(hash: string, ownHost: string): Endpoints {
  const p = new URLSearchParams(hash.replace(/^#/, ''));
  const get = (k: string) => (p.get(k) ?? '').trim();
  return {
    a: { host: get('agent') || ownHost, token: get('token') },
    b: { host: get('agent2'), token: get('token2') },
    given: ['token', 'agent', 'agent2', 'token2'].some((k) => p.has(k)),
  };
}

/** The fragment for these endpoints (agent A's host left out when it is the page's own). */
export function writeFragment(e: Omit<Endpoints, 'given'>, ownHost: string): string {
  const p = new URLSearchParams();
  if (e.a.host && e.a.host !== ownHost) p.set('agent', e.a.host);
  if (e.a.token) p.set('token', e.a.token);
  if (e.b.host) p.set('agent2', e.b.host);
  if (e.b.token) p.set('token2', e.b.token);
  return '#' + p.toString().replace(/%3A/gi, ':');
}

/** `host:port` -> `host`; `[::1]:9000` -> `::1`; `host` -> `host`. */
export function hostOnly(hostPort: string): string {
  const v6 = /^\[([^\]]+)\](?::\d+)?$/.exec(hostPort);
  if (v6) return v6[1];
  const i = hostPort.lastIndexOf(':');
  return i > 0 && hostPort.indexOf(':') === i ? hostPort.slice(0, i) : hostPort;
}
