// The CPU rows of a side's summary: the words `meshperf run` prints, and
// nothing for a result written before agents measured CPU.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cpuHost, cpuThreads, zeroCopy } from '../src/lib/result/cpu.ts';

test('a side\'s cpu reads as the CLI prints it, and old summaries show none', () => {
  const c = {
    seconds: 1.0005, user_seconds: 0.041, system_seconds: 0.0824, threads: 3, percent: 12.34,
    host_percent: 48.06, host_user_percent: 10, host_system_percent: 38.06, host_cpus: 2,
  };
  assert.equal(cpuThreads(c), '12.3% of a CPU (user 0.041 s, system 0.082 s, 3 threads, 1.000 s)');
  assert.equal(cpuHost(c), '48.1% of 2 CPUs (user 10.0%, system 38.1%)');
  assert.equal(cpuThreads({ ...c, threads: 1 }).includes('1 thread,'), true);
  assert.equal(cpuHost({ ...c, host_percent: null }), null);
  assert.equal(cpuThreads(undefined), null);
  assert.equal(cpuHost(undefined), null);
});

test('a zero-copy sender reads as the CLI prints it, other sides and old results show none', () => {
  const s = {
    sent_bytes: 2e9, zerocopy_sends: 10, zerocopy_zero_copied: 4, zerocopy_copied: 6,
    cpu: { user_seconds: 0.25, system_seconds: 0.75 },
  };
  assert.equal(zeroCopy(s), '10 sends with MSG_ZEROCOPY, 4 zero-copy, 6 copied by the kernel; 0.500 CPU s per GB sent');
  assert.equal(zeroCopy({ ...s, cpu: undefined }), '10 sends with MSG_ZEROCOPY, 4 zero-copy, 6 copied by the kernel');
  assert.equal(zeroCopy({ sent_bytes: 5, received_bytes: 0 }), null);
  assert.equal(zeroCopy(null), null);
  assert.equal(zeroCopy({ ...s, cpu: undefined, zerocopy_enobufs: 2 }), '10 sends with MSG_ZEROCOPY, 4 zero-copy, 6 copied by the kernel (2 made again after ENOBUFS)');
});
