// Footprint: release binary size (web app embedded) and an idle agent's RSS.
import { statSync, readFileSync } from 'node:fs';
import { bin, fmt, results } from './lib.mjs';

export async function footprint(agents) {
  console.log('\n== footprint');
  const mb = statSync(bin).size / 1e6;
  const rss = Number(readFileSync(`/proc/${agents[0].pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/)[1]) / 1024;
  console.log(`release binary with embedded web app: ${fmt(mb)} MB (target <= 4 MB: ${mb <= 4 ? 'met' : 'missed'})`);
  console.log(`agent RSS after the runs above: ${fmt(rss)} MB (target idle <= 8 MB: ${rss <= 8 ? 'met' : 'missed'})`);
  results.push({ name: 'binary size 4 MB / actual', ratio: 4 / mb }, { name: 'agent RSS 8 MB / actual', ratio: 8 / rss });
}
