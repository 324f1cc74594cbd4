// Footprint: release binary size (web app embedded), an idle agent's RSS,
// and the codec module the page loads to run a plan (issue 26: <= 150 KB gzip).
import { statSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { bin, fmt, results, root } from './lib.mjs';

/** gzip -9 size of each file of the built web app (web/dist, what the agent embeds), by name. */
function distGzip() {
  const out = new Map();
  const base = join(root, 'web/dist');
  const walk = (dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else out.set(p.slice(base.length + 1), gzipSync(readFileSync(p), { level: 9 }).length);
    }
  };
  walk(base);
  return out;
}

export async function footprint(agents) {
  console.log('\n== footprint');
  const mb = statSync(bin).size / 1e6;
  const rss = Number(readFileSync(`/proc/${agents[0].pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/)[1]) / 1024;
  console.log(`release binary with embedded web app: ${fmt(mb)} MB (target <= 4 MB: ${mb <= 4 ? 'met' : 'missed'})`);
  console.log(`agent RSS after the runs above: ${fmt(rss)} MB (target idle <= 8 MB: ${rss <= 8 ? 'met' : 'missed'})`);
  results.push({ name: 'binary size 4 MB / actual', ratio: 4 / mb }, { name: 'agent RSS 8 MB / actual', ratio: 8 / rss });
  let dist;
  try {
    dist = distGzip();
  } catch {
    console.log('web/dist missing: no codec size (run scripts/build.sh)');
    return;
  }
  const codec = [...dist].find(([name]) => /meshperf_codec_bg-[^/]*\.wasm$/.test(name));
  const total = [...dist.values()].reduce((a, b) => a + b, 0);
  console.log(`web app embedded (web/dist, gzip -9): ${fmt(total / 1e3, 1)} KB in ${dist.size} files`);
  if (!codec) {
    console.log('web/dist has no meshperf_codec_bg-*.wasm: no codec size');
    return;
  }
  const kb = codec[1] / 1e3;
  console.log(`codec module (${codec[0]}, gzip -9): ${fmt(kb, 1)} KB (target <= 150 KB: ${kb <= 150 ? 'met' : 'missed'})`);
  results.push({ name: 'codec gzip 150 KB / actual', ratio: 150 / kb });
}
