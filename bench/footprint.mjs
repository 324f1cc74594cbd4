// Footprint: release binary size (web app embedded), an idle agent's RSS,
// and the wasm modules the page loads on demand (issue 26: each <= 150 KB
// gzip): meshperf_codec to run a plan, meshperf_view to show a result.
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
  const total = [...dist.values()].reduce((a, b) => a + b, 0);
  console.log(`web app embedded (web/dist, gzip -9): ${fmt(total / 1e3, 1)} KB in ${dist.size} files`);
  // Run a plan: stats + codec (view while the result comes); open a link: stats + view.
  for (const [module, what] of [['codec', 'to run a plan'], ['view', 'to show a result']]) {
    const found = [...dist].find(([name]) => new RegExp(`meshperf_${module}_bg-[^/]*\\.wasm$`).test(name));
    if (!found) {
      console.log(`web/dist has no meshperf_${module}_bg-*.wasm: no ${module} size`);
      continue;
    }
    const kb = found[1] / 1e3;
    console.log(`${module} module ${what} (${found[0]}, gzip -9): ${fmt(kb, 1)} KB (target <= 150 KB: ${kb <= 150 ? 'met' : 'missed'})`);
    results.push({ name: `${module} gzip 150 KB / actual`, ratio: 150 / kb });
  }
}
