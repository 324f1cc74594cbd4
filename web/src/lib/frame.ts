// Sample frames (see protocol/src/frame.rs): one WebSocket binary message is a
// 24-byte little-endian header followed by `count` u64 LE values.

export const HEADER_LEN = 24;
const MAGIC = 0x4653504d; // "MPSF" read as a little-endian u32

/** Sample kinds, as in `SampleKind`. */
export const SampleKind = {
  IntervalBytes: 1,
  RttNs: 2,
  ReadBytes: 3,
  SendTimeNs: 4,
  ArrivalNs: 5,
  Sequence: 6,
  TcpRttUs: 7,
  TcpCwnd: 8,
  TcpRetrans: 9,
} as const;

/** Bit 7 of the kind byte: the serving side recorded the values. */
export const SERVER_BIT = 0x80;

export interface Frame {
  kind: number;
  /** Which side of the test recorded the values. */
  role: 'client' | 'server';
  stream: number;
  testId: number;
  step: number;
  firstSeq: number;
  /** Values as doubles (exact below 2^53, which covers bytes, ns and counts here). */
  values: Float64Array;
}

/** Decodes a frame; throws an Error saying what is wrong. */
export function decodeFrame(buf: ArrayBuffer): Frame {
  if (buf.byteLength < HEADER_LEN) throw new Error(`sample frame truncated: ${buf.byteLength} bytes`);
  const dv = new DataView(buf);
  if (dv.getUint32(0, true) !== MAGIC) throw new Error('not a meshperf sample frame (bad magic)');
  const version = dv.getUint8(4);
  if (version !== 1) throw new Error(`sample frame version ${version} not supported (this page reads version 1)`);
  const count = dv.getUint32(20, true);
  if (buf.byteLength !== HEADER_LEN + count * 8) throw new Error(`sample frame truncated: ${buf.byteLength} bytes`);
  // The header is 24 bytes, so the values are 8-byte aligned in the buffer.
  const raw = new BigUint64Array(buf, HEADER_LEN, count);
  const values = new Float64Array(count);
  for (let i = 0; i < count; i++) values[i] = Number(raw[i]);
  return {
    kind: dv.getUint8(5) & ~SERVER_BIT,
    role: dv.getUint8(5) & SERVER_BIT ? 'server' : 'client',
    stream: dv.getUint16(6, true),
    testId: dv.getUint32(8, true),
    step: dv.getUint32(12, true),
    firstSeq: dv.getUint32(16, true),
    values,
  };
}

/** Encodes a frame (for tests and for replaying saved samples). */
export function encodeFrame(f: Omit<Frame, 'values'> & { values: ArrayLike<number> }): ArrayBuffer {
  const buf = new ArrayBuffer(HEADER_LEN + f.values.length * 8);
  const dv = new DataView(buf);
  dv.setUint32(0, MAGIC, true);
  dv.setUint8(4, 1);
  dv.setUint8(5, f.kind | (f.role === 'server' ? SERVER_BIT : 0));
  dv.setUint16(6, f.stream, true);
  dv.setUint32(8, f.testId, true);
  dv.setUint32(12, f.step, true);
  dv.setUint32(16, f.firstSeq, true);
  dv.setUint32(20, f.values.length, true);
  const out = new BigUint64Array(buf, HEADER_LEN);
  for (let i = 0; i < f.values.length; i++) out[i] = BigInt(f.values[i]);
  return buf;
}
