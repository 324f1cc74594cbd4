// The CPU rows of a side's summary: the words `meshperf run` prints, and
// nothing for a result written before agents measured CPU.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cpuHost, cpuThreads } from '../src/lib/result/cpu.ts';

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
