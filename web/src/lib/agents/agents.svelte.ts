// Owns the agent WebSockets: connection, hello/auth handshake, request ids and
// replies, and routing of test events and sample frames to whoever runs the
// test. Components read the reactive fields and call methods; they never touch
// a socket.


import { addressError } from './fragment';
import { PROTOCOL_MAX, PROTOCOL_VERSION } from '../generated/params';

/**
 * The control protocol version the page uses with an agent whose hello says
 * it speaks `lo` to `hi`: the highest both speak, or why there is none in
 * one line (protocol/src/lib.rs `common_protocol`, the same words).
 */
export function commonProtocol(lo: number, hi: number, who: string): number | string {
  const v = Math.min(PROTOCOL_MAX, hi);
  if (v >= Math.max(PROTOCOL_VERSION, lo)) return v;
  const range = (a: number, b: number) => (a === b ? `${a}` : `${a} to ${b}`);
  const fix =
    lo > PROTOCOL_MAX
      ? 'it is newer than this meshperf: upgrade this meshperf (or the page) to one that speaks it'
      : 'it is older than this meshperf speaks: upgrade the agent';
  return `${who} speaks protocol ${range(lo, hi)}, this meshperf ${range(PROTOCOL_VERSION, PROTOCOL_MAX)}: ${fix}`;
}

export type AgentState = 'idle' | 'connecting' | 'ready' | 'auth_failed' | 'error' | 'closed';

// The agent's info and limits as the Rust types define them (protocol/src/msg.rs).
import type { AgentInfo } from '../generated/wire/AgentInfo';
export type { AgentInfo };
export type { Limits } from '../generated/wire/Limits';

/** A JSON event from an agent (`type` plus the fields msg.rs gives it). */
export type AgentMsg = { type: string; id?: number; test_id?: number; [k: string]: any };

/** Receives what an agent says about one test. */
export interface TestListener {
  event(agent: Agent, msg: AgentMsg): void;
  /** A binary sample frame (protocol/src/frame.rs), decoded by the step driver. */
  frame(agent: Agent, frame: ArrayBuffer): void;
  /** The agent's socket closed while the test was registered. */
  closed(agent: Agent): void;
}

/** An error reply to a request, with the agent's code and message verbatim. */
export class AgentError extends Error {
  constructor(readonly code: string, message: string) {
    super(message);
  }
}

/** Why the agent refused the token, and where the right one comes from. */
const authFailed = (token: string) =>
  `authentication failed: ${token ? 'that is not its token' : 'no token given'}. The token is in the URL the agent printed when it started (…/#token=…), or in the file given to its --token-file; open that URL, or type the token above and press Connect`;

type Pending = { resolve: (m: AgentMsg) => void; reject: (e: Error) => void };

export class Agent {
  host = $state('');
  token = $state('');
  state = $state<AgentState>('idle');
  info = $state.raw<AgentInfo | null>(null);
  /** The protocol version spoken with this agent (the highest both speak), once its hello came. */
  protocol = 0;
  error = $state('');

  #ws: WebSocket | null = null;
  #nextId = 1;
  #pending = new Map<number, Pending>();
  #tests = new Map<number, TestListener>();

  constructor(readonly name: string) {}

  /** "agent B (10.0.0.2:9000)": how messages name this agent. */
  get label(): string {
    return `agent ${this.name} (${this.host || 'no address'})`;
  }

  connect(host = this.host, token = this.token): void {
    this.close();
    this.host = host.trim();
    this.token = token;
    this.info = null;
    this.error = '';
    if (!this.host) {
      this.state = 'idle';
      return;
    }
    const bad = addressError(this.host);
    if (bad) {
      this.#fail('error', `${this.label}: not an address: ${bad}`);
      return;
    }
    const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
    let ws: WebSocket;
    try {
      ws = new WebSocket(`${scheme}://${this.host}/ws`);
    } catch (e) {
      this.#fail('error', `${this.label}: not a valid address (${(e as Error).message})`);
      return;
    }
    ws.binaryType = 'arraybuffer';
    this.#ws = ws;
    this.state = 'connecting';
    ws.onmessage = (ev) => this.#receive(ev.data);
    ws.onclose = (ev) => {
      if (this.#ws !== ws) return;
      this.#ws = null;
      const was = this.state;
      if (was === 'connecting') {
        if (ev.reason) this.#fail('error', `${this.label}: cannot connect: ${ev.reason}`);
        else this.#whyRefused();
      } else if (was === 'ready') {
        this.#fail('closed', `${this.label} disconnected`);
      }
      this.#dropAll();
    };
  }

  /**
   * A WebSocket refused before it opened tells the page nothing (a 403 and
   * a port with nothing listening look the same). The agent's /healthz
   * answers anyone: an answer there means the agent is running and refused
   * this page, which it does for an origin not its own nor given to
   * --allow-origin (its record names the origin it refused).
   */
  #whyRefused(): void {
    this.state = 'connecting';
    const host = this.host;
    const http = location.protocol === 'https:' ? 'https' : 'http';
    const done = (message: string) => {
      // Still the same attempt (not reconnected or closed meanwhile).
      if (this.host === host && this.#ws === null && this.state === 'connecting') this.#fail('error', message);
    };
    const ask = new AbortController();
    const timer = setTimeout(() => ask.abort(), 5000);
    fetch(`${http}://${host}/healthz`, { mode: 'no-cors', cache: 'no-store', signal: ask.signal, credentials: 'omit' })
      .then(
        () =>
          done(
            `${this.label}: the agent answers but refused this page (origin ${location.origin}). ` +
              `Start it with --allow-origin ${location.origin}, or open the page the agent itself serves`,
          ),
        () =>
          done(
            `${this.label}: nothing answers at ${http}://${host} (is the agent running, at this address and port${http === 'https' ? ', with TLS' : ''}?)`,
          ),
      )
      .finally(() => clearTimeout(timer));
  }

  /** Closes the socket on purpose (no error shown). */
  close(): void {
    const ws = this.#ws;
    this.#ws = null;
    if (ws) ws.close();
    this.#dropAll();
    if (this.state !== 'auth_failed' && this.state !== 'error') this.state = 'closed';
  }

  /** Sends a request with a fresh id; resolves with the reply, rejects with an AgentError. */
  request(msg: { type: string; [k: string]: unknown }): Promise<AgentMsg> {
    return new Promise((resolve, reject) => {
      if (!this.#ws || this.state !== 'ready') {
        reject(new AgentError('not_connected', `${this.label} is not connected`));
        return;
      }
      const id = this.#nextId++;
      this.#pending.set(id, { resolve, reject });
      this.#ws.send(JSON.stringify({ ...msg, id }));
    });
  }

  /** Routes events and frames of `testId` to `l` until `unwatch`. */
  watch(testId: number, l: TestListener): void {
    this.#tests.set(testId, l);
  }

  unwatch(testId: number): void {
    this.#tests.delete(testId);
  }

  #fail(state: AgentState, message: string): void {
    this.state = state;
    this.error = message;
  }

  #dropAll(): void {
    for (const p of this.#pending.values()) p.reject(new AgentError('closed', `${this.label} disconnected`));
    this.#pending.clear();
    const tests = [...this.#tests.values()];
    this.#tests.clear();
    for (const t of tests) t.closed(this);
  }

  #receive(data: unknown): void {
    if (data instanceof ArrayBuffer) {
      // Routed by the test id at bytes 8..12 of the header; the step
      // driver (wasm) decodes and checks the whole frame.
      if (data.byteLength >= 12) this.#tests.get(new DataView(data).getUint32(8, true))?.frame(this, data);
      return;
    }
    let msg: AgentMsg;
    try {
      msg = JSON.parse(String(data));
    } catch {
      console.warn(`${this.label}: a control message that is not JSON`);
      return;
    }
    switch (msg.type) {
      case 'hello':
        return this.#hello(msg.protocol, msg.protocol_max);
      case 'auth_ok':
        // The agent describes itself only after the token was accepted.
        this.info = msg.info as AgentInfo;
        this.state = 'ready';
        return;
      case 'error':
        if (this.state === 'connecting') {
          const text = msg.code === 'auth_failed' ? authFailed(this.token) : `${msg.message} (${msg.code})`;
          this.#fail(msg.code === 'auth_failed' ? 'auth_failed' : 'error', `${this.label}: ${text}`);
          this.#ws?.close();
          return;
        }
        break;
    }
    if (msg.id != null && this.#pending.has(msg.id)) {
      const p = this.#pending.get(msg.id)!;
      this.#pending.delete(msg.id);
      if (msg.type === 'error') p.reject(new AgentError(msg.code, msg.message));
      else p.resolve(msg);
    } else if (msg.test_id != null) {
      this.#tests.get(msg.test_id)?.event(this, msg);
    }
  }

  /**
   * `hello` carries only the protocol versions the agent speaks (`protocol`
   * the lowest, `protocol_max` the highest; agents before it speak one);
   * `info` comes with `auth_ok`. The page uses the highest both speak and
   * says which in `auth`.
   */
  #hello(lo: unknown, hi: unknown): void {
    const top = hi ?? lo;
    const v =
      Number.isInteger(lo) && Number.isInteger(top)
        ? commonProtocol(lo as number, top as number, this.label)
        : `${this.label} sent a hello without a protocol version`;
    if (typeof v === 'string') {
      this.#fail('error', v);
      this.#ws?.close();
      return;
    }
    this.protocol = v;
    const auth: Record<string, unknown> = { type: 'auth', id: this.#nextId++, token: this.token };
    if (hi != null) auth.protocol = v;
    this.#ws!.send(JSON.stringify(auth));
  }
}

/** Why a test cannot start with `a` (not ready), and what to do. */
export function notConnected(a: Agent): string {
  if (a.state === 'idle')
    return 'no agent connected yet: open the URL an agent printed when it started (…/#token=…; alone, that agent is both ends), or type an address and its token above and press Connect';
  return `${a.label} is not connected: connect both agents first (an agent's own URL makes it both ends)`;
}

/** The two agents of the walking skeleton: A serves, B drives. */
export const agents = { a: new Agent('A'), b: new Agent('B') };
