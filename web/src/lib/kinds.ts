// What the plan builder knows about each test kind: one parameter table per
// kind, mirroring protocol/src/params/*.rs (names, units, defaults). The agents
// validate again; the table only drives the form. A new kind is a new entry.

export type ParamType = 'size' | 'int' | 'float' | 'bool' | 'enum' | 'text';

export interface ParamSpec {
  name: string;
  type: ParamType;
  /** What the field means, with its unit. */
  label: string;
  /** The agent's default, shown as a placeholder ('' = none). */
  def?: string;
  /** Pre-filled value (sent unless cleared). */
  initial?: string;
  options?: string[];
  /** Smallest value the agents accept (checked before anything runs). */
  min?: number;
  /** Shown under "more options". */
  advanced?: boolean;
  /** Only over TCP (hidden for unix_* kinds). */
  tcp?: boolean;
}

const sock: ParamSpec[] = [
  { name: 'sndbuf', type: 'size', label: 'SO_SNDBUF (bytes)', advanced: true },
  { name: 'rcvbuf', type: 'size', label: 'SO_RCVBUF (bytes)', advanced: true },
  { name: 'tos', type: 'int', label: 'TOS / DSCP byte', advanced: true, tcp: true },
  { name: 'precedence', min: 0, type: 'int', label: 'IP precedence (0-7)', advanced: true, tcp: true },
];
const binds: ParamSpec[] = [
  { name: 'client_bind', type: 'text', label: 'driving agent local address', advanced: true, tcp: true },
  { name: 'server_bind', type: 'text', label: 'serving agent listen address', advanced: true, tcp: true },
];
const tcpOnly: ParamSpec[] = [
  { name: 'congestion', type: 'text', label: 'congestion control', advanced: true, tcp: true },
  { name: 'mss', min: 88, type: 'int', label: 'TCP_MAXSEG, segment size (bytes)', def: 'path MTU', advanced: true, tcp: true },
  ...binds,
];

const stream: ParamSpec[] = [
  { name: 'msg_bytes', min: 1, type: 'size', label: 'message size', def: '128K', initial: '1M' },
  { name: 'count', min: 1, type: 'int', label: 'messages', def: '1024', initial: '1024' },
  { name: 'duration_s', type: 'float', label: 'seconds', def: '' },
  { name: 'streams', min: 1, type: 'int', label: 'streams', def: '1' },
  { name: 'direction', type: 'enum', label: 'direction', def: 'send', options: ['send', 'receive', 'both'], initial: 'send' },
  { name: 'wait_us', type: 'int', label: 'wait between writes (us)', def: '0' },
  { name: 'read_bytes', min: 1, type: 'size', label: 'read size', def: '= message size', advanced: true },
  { name: 'nodelay', type: 'bool', label: 'TCP_NODELAY', def: 'false', advanced: true, tcp: true },
  { name: 'rcvlowat', min: 1, type: 'size', label: 'SO_RCVLOWAT (bytes)', def: 'read size (max 128K) unpaced, else 1', advanced: true, tcp: true },
  { name: 'payload', type: 'enum', label: 'payload (random: no link can compress it)', def: 'random', options: ['random', 'zeros'], advanced: true },
  ...sock,
  ...tcpOnly,
  { name: 'interval_ms', min: 1, type: 'int', label: 'sample interval (ms)', def: '10', advanced: true },
];

const rr: ParamSpec[] = [
  { name: 'req_bytes', min: 1, type: 'size', label: 'request size', def: '64', initial: '64' },
  { name: 'resp_bytes', min: 1, type: 'size', label: 'response size', def: '64', initial: '64' },
  { name: 'count', min: 1, type: 'int', label: 'transactions', def: '10000', initial: '10000' },
  { name: 'duration_s', type: 'float', label: 'seconds', def: '' },
  { name: 'wait_us', type: 'int', label: 'wait between requests (us)', def: '0' },
  { name: 'write_bytes', min: 1, type: 'size', label: 'largest single write', advanced: true },
  { name: 'busy_poll', type: 'bool', label: 'busy poll', def: 'false', advanced: true },
  { name: 'nodelay', type: 'bool', label: 'TCP_NODELAY', def: 'true', advanced: true, tcp: true },
  ...sock,
  ...tcpOnly,
  { name: 'interval_ms', min: 1, type: 'int', label: 'progress interval (ms)', def: '100', advanced: true },
];

const udpRr: ParamSpec[] = [
  { name: 'req_bytes', min: 1, type: 'size', label: 'request size', def: '64', initial: '64' },
  { name: 'resp_bytes', min: 1, type: 'size', label: 'response size', def: '64', initial: '64' },
  { name: 'count', min: 1, type: 'int', label: 'requests', def: '1000', initial: '1000' },
  { name: 'duration_s', type: 'float', label: 'seconds', def: '' },
  { name: 'timeout_ms', min: 1, type: 'int', label: 'timeout per request (ms)', def: '1000' },
  ...sock,
  ...binds,
  { name: 'interval_ms', min: 1, type: 'int', label: 'progress interval (ms)', def: '100', advanced: true },
];

const udpStream: ParamSpec[] = [
  { name: 'pkt_bytes', min: 18, type: 'size', label: 'packet size', def: '1400', initial: '1400' },
  { name: 'count', min: 1, type: 'int', label: 'packets', def: '10000', initial: '10000' },
  { name: 'wait_us', type: 'float', label: 'wait between packets (us)', def: '0', initial: '20' },
  { name: 'direction', type: 'enum', label: 'direction', def: 'send', options: ['send', 'receive'], initial: 'send' },
  ...sock,
  ...binds,
  { name: 'overhead_bytes', type: 'int', label: 'wire overhead per frame (bytes)', def: '66', advanced: true },
  { name: 'timeout_ms', min: 1, type: 'int', label: 'receiver quiet timeout (ms)', def: '1000', advanced: true },
];

export const KINDS: Record<string, { label: string; params: ParamSpec[] }> = {
  tcp_stream: { label: 'TCP stream (throughput)', params: stream },
  tcp_rr: { label: 'TCP request/response (latency)', params: rr },
  udp_stream: { label: 'UDP stream (paced, loss)', params: udpStream },
  udp_rr: { label: 'UDP request/response (latency)', params: udpRr },
  unix_stream: { label: 'Unix socket stream', params: stream.filter((p) => !p.tcp) },
  unix_rr: { label: 'Unix socket request/response', params: rr.filter((p) => !p.tcp) },
};

export const isRr = (kind: string) => kind.endsWith('_rr');
export const isStream = (kind: string) => kind === 'tcp_stream' || kind === 'unix_stream';

/** Parameters that can be swept, plus the categorical axes. */
export function sweepable(kind: string): string[] {
  const ps = KINDS[kind]?.params ?? [];
  const nums = ps.filter((p) => p.type === 'size' || p.type === 'int' || p.type === 'float').map((p) => p.name);
  const cats = ps.filter((p) => p.type === 'enum' || p.type === 'bool' || p.type === 'text').map((p) => p.name);
  const transport = kind === 'tcp_stream' || kind === 'tcp_rr' || kind.startsWith('unix_') ? ['transport'] : [];
  return [...nums, ...transport, ...cats];
}

export const TRANSPORTS = ['unix', 'tcp', 'tcp_local'];

/** Who sends: by direction, seen from the driving (client) agent. */
export function sends(role: 'client' | 'server', d: string): boolean {
  return d === 'both' || (d === 'send') === (role === 'client');
}
