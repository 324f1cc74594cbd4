// The URL fragment: `#token=TA&agent2=HOST:PORT&token2=TB[&agent=HOST:PORT]`
// (a matrix's agents are `mesh=`: matrix/mesh.svelte.ts). Agents with TLS add
// `fp=HEX` (agent A) and `fp2=HEX` (agent B), their certificates' SHA-256: the
// browser does not use them (it trusts certificates its own way) but keeps
// them, so the address bar stays a URL `meshperf run --agent` can pin by.
// The fragment never reaches a server; tokens leave the page only in `auth`.
// Once the page has read them, they leave the address bar too (session.ts).
// An agent's own printed URL (`#token=T`, no `agent2`) makes that agent both
// ends, as `meshperf run` with one `--agent` does: two control sessions to it.

export interface Endpoint {
  host: string;
  token: string;
  /** The certificate's SHA-256 (hex) an https agent printed, if any. */
  fp?: string;
}

export interface Endpoints {
  a: Endpoint;
  b: Endpoint;
  /** True when the fragment named anything, so the page may connect at once. */
  given: boolean;
}

export function readFragment(hash: string, ownHost: string): Endpoints {
  const p = new URLSearchParams(hash.replace(/^#/, ''));
  const get = (k: string) => (p.get(k) ?? '').trim();
  const given = ['token', 'agent', 'agent2', 'token2'].some((k) => p.has(k));
  const a = { host: get('agent') || ownHost, token: get('token'), fp: get('fp') || undefined };
  const alone = given && !p.has('agent2') && !p.has('token2');
  return {
    a,
    b: alone ? { ...a } : { host: get('agent2'), token: get('token2'), fp: get('fp2') || undefined },
    given,
  };
}

/** The fragment without the pair's tokens (`token`, `token2`), the rest as it was. */
export function withoutTokens(hash: string): string {
  const p = new URLSearchParams(hash.replace(/^#/, ''));
  p.delete('token');
  p.delete('token2');
  const out = p.toString().replace(/%3A/gi, ':').replace(/%2C/gi, ',').replace(/%40/gi, '@');
  return out ? '#' + out : '';
}

/**
 * The fragment for these endpoints (agent A's host left out when it is the
 * page's own; agent B left out when it is agent A).
 */
export function writeFragment(e: Omit<Endpoints, 'given'>, ownHost: string): string {
  const p = new URLSearchParams();
  if (e.a.host && e.a.host !== ownHost) p.set('agent', e.a.host);
  if (e.a.token) p.set('token', e.a.token);
  if (e.a.fp) p.set('fp', e.a.fp);
  const alone = e.b.host === e.a.host && e.b.token === e.a.token;
  if (e.b.host && !alone) p.set('agent2', e.b.host);
  if (e.b.token && !alone) p.set('token2', e.b.token);
  if (e.b.fp && !alone) p.set('fp2', e.b.fp);
  return '#' + p.toString().replace(/%3A/gi, ':');
}

/** `host:port` -> `host`; `[::1]:9000` -> `::1`; `host` -> `host`. */
export function hostOnly(hostPort: string): string {
  const v6 = /^\[([^\]]+)\](?::\d+)?$/.exec(hostPort);
  if (v6) return v6[1];
  const i = hostPort.lastIndexOf(':');
  return i > 0 && hostPort.indexOf(':') === i ? hostPort.slice(0, i) : hostPort;
}

/**
 * Why `hostPort` is not an agent's address (`host:port`, `host`, `[v6]:port`),
 * or null when it is one. "not a host" was taken and tried (issue 45, item 17).
 */
export function addressError(hostPort: string): string | null {
  const h = hostPort.trim();
  const want = `expected host:port (e.g. 10.0.0.2:7800 or [::1]:7800), got ${JSON.stringify(h)}`;
  if (!h || /[\s/?#@\\]/.test(h)) return want;
  const port = /:(\d+)$/.exec(h)?.[1];
  if (port != null && (Number(port) < 1 || Number(port) > 65535)) return `port ${port} is outside 1 to 65535`;
  let u: URL;
  try {
    u = new URL(`http://${h}`);
  } catch {
    return want;
  }
  return u.hostname && u.pathname === '/' ? null : want;
}
