// The mesh (issue 11). 1. Six agents in separate network namespaces on one
// bridge, links at 1 Gbit/s (bench/mesh.sh, root only): the same matrix with
// the concurrent rounds (circle method: 3 pairs at once, 10 rounds) and with
// --serial (30 steps), wall time of the whole `meshperf run`, medians of
// BENCH_MESH_ROUNDS (default 3) alternating runs; target concurrent/serial
// <= 0.45: tcp_stream, tcp_rr on the bare links (bound by the two cores),
// and tcp_rr over paths of 1 ms each way (delay lines; as between hosts). 2. The controller's CPU per step: one `meshperf run --matrix`
// over 64 agents on loopback (64 ports on 127.0.0.1, alternately on CPU 0
// and 1) with a tiny udp_rr step, 4032 pairs, user + sys CPU seconds of that
// process alone (getrusage of the child, as /usr/bin/time) per step.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { bin, children, fmt, median, results, root, startAgent, tmp } from './lib.mjs';

export async function mesh() {
  meshRounds();
  await controllerCpu();
}

function meshRounds() {
  const rounds = Number(process.env.BENCH_MESH_ROUNDS || 3);
  console.log(`\n== mesh: 6 agents in network namespaces, links at 1 Gbit/s, concurrent rounds vs --serial, ${rounds} rounds alternating`);
  if (process.getuid() !== 0) {
    console.log('mesh: skipped the namespaces part (needs root to create network namespaces)');
    return;
  }
  const r = spawnSync('bash', [join(root, 'bench/mesh.sh'), String(rounds)], { encoding: 'utf8', timeout: 1_800_000 });
  if (r.status !== 0) throw new Error(`bench/mesh.sh exited ${r.status}: ${r.stderr}`);
  if (r.stderr.trim()) console.log(r.stderr.trim());
  const walls = {};
  for (const line of r.stdout.split('\n').filter(Boolean)) {
    const [kind, mode, wall, failed] = line.split(' ');
    if (Number(failed) > 0) throw new Error(`${kind} ${mode}: ${failed} cells failed`);
    ((walls[kind] ??= { concurrent: [], serial: [] })[mode]).push(Number(wall));
  }
  for (const [kind, w] of Object.entries(walls)) {
    const c = median(w.concurrent), s = median(w.serial), ratio = c / s;
    results.push({ name: `mesh ${kind} 0.45 / (concurrent/serial)`, ratio: 0.45 / ratio });
    console.log(`${`mesh 6 agents ${kind}`.padEnd(34)} concurrent ${fmt(c)} s (${w.concurrent.map((x) => fmt(x)).join(', ')}), serial ${fmt(s)} s (${w.serial.map((x) => fmt(x)).join(', ')}): ratio ${fmt(ratio, 3)} (target <= 0.45: ${ratio <= 0.45 ? 'met' : 'missed'})`);
  }
}

// Runs argv[1:] and prints the user and sys CPU seconds it and its children
// took (getrusage(RUSAGE_CHILDREN), as /usr/bin/time; microseconds) and
// its wall seconds.
const RUSAGE = `import resource, subprocess, sys, time
t = time.monotonic()
rc = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"rusage {r.ru_utime:.6f} {r.ru_stime:.6f} {time.monotonic() - t:.3f}", file=sys.stderr)
sys.exit(rc)`;

async function controllerCpu() {
  const n = Number(process.env.BENCH_MESH_AGENTS || 64);
  const step = ['--kind', 'udp_rr', '--set', 'count=10'];
  console.log(`\n== mesh controller: meshperf run --matrix over ${n} loopback agents, ${step.slice(1).join(' ')}`);
  const agents = [];
  try {
    for (let i = 0; i < n; i++) agents.push(await startAgent(i % 2, [], 'ignore'));
    const jf = join(tmp, 'mesh64.json');
    const cmd = [bin, 'run', ...agents.flatMap((a) => ['--agent', a.url]), '--matrix', ...step, '--json', jf];
    const r = spawnSync('python3', ['-c', RUSAGE, ...cmd], { encoding: 'utf8', timeout: 1_200_000, maxBuffer: 1 << 28 });
    const m = r.stderr.match(/^rusage ([0-9.]+) ([0-9.]+) ([0-9.]+)$/m);
    if (!m) throw new Error(`no rusage (exit ${r.status}): ${r.stderr.slice(-500)}`);
    const [user, sys, wall] = m.slice(1).map(Number);
    const steps = JSON.parse(readFileSync(jf, 'utf8')).steps;
    const failed = steps.filter((s) => s.error).length;
    const pairs = n * (n - 1);
    if (steps.length !== pairs) throw new Error(`${steps.length} steps, expected ${pairs}`);
    const perStep = (user + sys) / pairs;
    if (perStep > 0) results.push({ name: 'mesh controller 1 ms CPU / step actual', ratio: 1e-3 / perStep });
    console.log(`${pairs} pairs (${failed} failed) in ${fmt(wall, 1)} s: controller CPU user ${fmt(user)} s + sys ${fmt(sys)} s = ${fmt(perStep * 1e3, 3)} ms per step, ${fmt(((user + sys) / wall) * 100, 1)}% of one CPU over the run`);
  } finally {
    for (const a of agents) {
      try { process.kill(a.pid); } catch {}
      const k = children.findIndex((c) => c.pid === a.pid);
      if (k >= 0) children.splice(k, 1);
    }
  }
}
