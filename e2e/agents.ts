// Starts real `meshperf agent` processes for the tests: ephemeral ports,
// random tokens (through the environment, as a user would), killed after
// each test. The port comes from the ready line the agent prints:
//   meshperf agent <version> ready: http://ADDR:PORT/ (the token is ...)
// (with TLS: https://ADDR:PORT/#fp=HEX ...); the token, given in
// MESHPERF_TOKEN, is never printed.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test as base } from '@playwright/test';

export const AGENT_BIN =
  process.env.MESHPERF_BIN ?? fileURLToPath(new URL('../target/release/meshperf', import.meta.url));

export interface Agent {
  name: string;
  host: string;
  port: number;
  token: string;
  origin: string;
  /** With TLS: the certificate's SHA-256 from the ready URL. */
  fp?: string;
  proc: ChildProcess;
  /** Everything the agent printed so far (stdout and stderr). */
  output(): string;
  /** Stops the agent (SIGKILL when `hard`) and waits for it to exit. */
  stop(hard?: boolean): Promise<void>;
}

const READY = / ready: (https?:\/\/[^\s]+)/;

/**
 * `extra`: more `meshperf agent` flags, e.g. `--tls-self-signed`; `ip`: the
 * loopback address it listens on (any of 127.0.0.0/8), on an ephemeral port.
 */
export async function startAgent(name: string, allowOrigins: string[] = [], extra: string[] = [], ip = '127.0.0.1'): Promise<Agent> {
  if (!existsSync(AGENT_BIN)) {
    throw new Error(`${AGENT_BIN} not found: run npm run build first`);
  }
  const token = randomBytes(16).toString('hex');
  const args = ['agent', '--listen', `${ip}:0`];
  for (const o of allowOrigins) args.push('--allow-origin', o);
  args.push(...extra);
  const proc = spawn(AGENT_BIN, args, {
    env: { ...process.env, MESHPERF_TOKEN: token },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  const url = await new Promise<URL>((resolve, reject) => {
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`agent ${name} printed no ready line within 10 s:\n${out}`));
    }, 10_000);
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      const m = READY.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(new URL(m[1]));
      }
    };
    proc.stdout!.on('data', onData);
    proc.stderr!.on('data', onData);
    proc.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`agent ${name} exited (${code ?? signal}) before it was ready:\n${out}`));
    });
  });
  // A token the agent was given is never printed: the fragment holds only
  // the certificate's fingerprint, if any.
  const fp = /^#fp=([0-9a-f]{64})$/.exec(url.hash)?.[1];
  if (out.includes(token) || url.hash !== (fp ? `#fp=${fp}` : '') || (url.protocol === 'https:') !== !!fp) {
    throw new Error(`agent ${name} printed ${url.href}, expected no token (it was given in MESHPERF_TOKEN)`);
  }
  return {
    name,
    host: url.hostname,
    port: Number(url.port),
    token,
    origin: url.origin,
    fp,
    proc,
    output: () => out,
    async stop(hard = false) {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(hard ? 'SIGKILL' : 'SIGTERM');
      const t = setTimeout(() => proc.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(t);
    },
  };
}

export interface Pair {
  /** Serves the page; the serving side of a test. */
  a: Agent;
  /** Reached by the page served from A, so it allows A's origin. */
  b: Agent;
  /** The URL a user would open: A's page with B paired through the fragment. */
  url(opts?: { tokenA?: string; tokenB?: string }): string;
}

/** `agents`: a fresh pair A + B for every test, stopped afterwards.
 * `scratch`: a folder of the test's own in the temp dir (result files, plans),
 * removed with what it holds when the test ends, passed or failed. */
export const test = base.extend<{ agents: Pair; scratch: string }>({
  scratch: async ({}, use) => {
    const dir = mkdtempSync(join(tmpdir(), 'meshperf-e2e-'));
    try {
      await use(dir);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
  agents: async ({}, use, testInfo) => {
    const a = await startAgent('A');
    let b: Agent;
    try {
      b = await startAgent('B', [a.origin]);
    } catch (e) {
      await a.stop();
      throw e;
    }
    await use({
      a,
      b,
      url: ({ tokenA = a.token, tokenB = b.token } = {}) =>
        `${a.origin}/#token=${tokenA}&agent2=${b.host}:${b.port}&token2=${tokenB}`,
    });
    await Promise.all([a.stop(), b.stop()]);
    await testInfo.attach('agent-a.log', { body: a.output(), contentType: 'text/plain' });
    await testInfo.attach('agent-b.log', { body: b.output(), contentType: 'text/plain' });
  },
});

export interface Mesh {
  /** The first serves the page; the others allow its origin. */
  agents: Agent[];
  /** The URL each agent prints when it is ready: http://HOST:PORT/#token=T. */
  urls: string[];
}

/** `n` agents for a matrix, the first serving the page; agent i listens on `ips[i]` if given. */
export async function startMesh(n: number, ips: string[] = []): Promise<Mesh> {
  const list: Agent[] = [];
  try {
    list.push(await startAgent('A', [], [], ips[0]));
    for (let i = 1; i < n; i++) list.push(await startAgent(i < 26 ? String.fromCharCode(65 + i) : `agent${i}`, [list[0].origin], [], ips[i]));
  } catch (e) {
    await Promise.all(list.map((a) => a.stop()));
    throw e;
  }
  return { agents: list, urls: list.map((a) => `${a.origin}/#token=${a.token}`) };
}

/** `mesh`: three fresh agents A, B, C for every test that asks, stopped afterwards. */
export const meshTest = base.extend<{ mesh: Mesh }>({
  mesh: async ({}, use, testInfo) => {
    const m = await startMesh(3);
    await use(m);
    await Promise.all(m.agents.map((a) => a.stop()));
    for (const a of m.agents) await testInfo.attach(`agent-${a.name.toLowerCase()}.log`, { body: a.output(), contentType: 'text/plain' });
  },
});

export { expect } from '@playwright/test';

/**
 * A time in µs with its unit by the one rule the page and CLI write durations
 * with (protocol/src/units.rs `MS_FROM_US`: µs below 10 ms, ms from it), five
 * significant digits as a matrix tooltip has them: `449 µs`, `12.87 ms`.
 */
export const timeText = (us: number): string => (Math.abs(us) >= 10_000 ? `${Number((us / 1e3).toPrecision(5))} ms` : `${Number(us.toPrecision(5))} µs`);
