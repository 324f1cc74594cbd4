// Exports: the whole run as `;`-separated CSV (written by protocol/src/export.rs
// through the codec module, as `meshperf run --csv` writes it),
// as a result JSON file, one step's raw samples (CSV) or result (JSON), and
// any plot as PNG.

import { resultJson, type RunResult, type StepResult } from './result';
import { stepCsv } from './stepcsv';
import { loadStats, loadView } from '../wasm';

/** A file name stem for a run: meshperf-<plan>-<yyyymmdd-hhmmss>. */
export function stem(r: RunResult): string {
  const d = new Date((r.created_unix || Date.now() / 1000) * 1000);
  const p = (n: number) => String(n).padStart(2, '0');
  const when = `${d.getFullYear()}${p(d.getMonth() + 1)}${p(d.getDate())}-${p(d.getHours())}${p(d.getMinutes())}${p(d.getSeconds())}`;
  const name = (r.plan.name ?? r.plan.kind).replace(/[^\w-]+/g, '_');
  return `meshperf-${name}-${when}`;
}

export function download(name: string, data: Blob | string, type = 'text/plain'): void {
  const blob = typeof data === 'string' ? new Blob([data], { type }) : data;
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

export const exportCsv = async (r: RunResult) => download(`${stem(r)}.csv`, (await loadView()).result_csv(resultJson(r)), 'text/csv');
export const exportJson = (r: RunResult) => download(`${stem(r)}.json`, resultJson(r), 'application/json');

/** The run reduced to one step: a result file of its own. */
const oneStep = (r: RunResult, step: StepResult): RunResult => ({ ...r, steps: [step] });
export const exportStepCsv = async (r: RunResult, step: StepResult) =>
  download(`${stem(r)}-step${step.index}.csv`, stepCsv(step, await loadStats()), 'text/csv');
export const exportStepJson = (r: RunResult, step: StepResult) =>
  download(`${stem(r)}-step${step.index}.json`, resultJson(oneStep(r, step)), 'application/json');

/**
 * Saves the chart inside `el` (a uPlot canvas) as PNG on the page's
 * background, with the title above and the legend (read from uPlot's legend)
 * below, so the picture explains itself.
 */
export function exportPng(el: HTMLElement, name: string, title: string): void {
  const src = el.querySelector('canvas');
  if (!src) return;
  const dpr = src.width / (src.clientWidth || src.width);
  const items = [...el.querySelectorAll<HTMLElement>('.u-legend .u-series')].slice(1).map((s) => ({
    label: s.querySelector('.u-label')?.textContent ?? '',
    color: getComputedStyle(s.querySelector('.u-marker') ?? s).borderColor,
  }));
  const pad = 28 * dpr;
  const c = document.createElement('canvas');
  c.width = src.width;
  c.height = src.height + pad * 2;
  const g = c.getContext('2d')!;
  const style = getComputedStyle(document.body);
  g.fillStyle = style.backgroundColor || '#fff';
  g.fillRect(0, 0, c.width, c.height);
  g.fillStyle = style.color || '#000';
  g.font = `bold ${14 * dpr}px system-ui, sans-serif`;
  g.fillText(title, 8 * dpr, 19 * dpr);
  g.drawImage(src, 0, pad);
  g.font = `${12 * dpr}px system-ui, sans-serif`;
  let x = 8 * dpr;
  for (const it of items) {
    g.fillStyle = it.color;
    g.fillRect(x, c.height - pad / 2 - 5 * dpr, 14 * dpr, 4 * dpr);
    g.fillStyle = style.color || '#000';
    g.fillText(it.label, x + 18 * dpr, c.height - pad / 2);
    x += g.measureText(it.label).width + 36 * dpr;
  }
  download(`${name}.png`, dataUrlBlob(c.toDataURL('image/png')));
}

function dataUrlBlob(url: string): Blob {
  const [head, b64] = url.split(',');
  const bin = atob(b64);
  const bytes = Uint8Array.from(bin, (ch) => ch.charCodeAt(0));
  return new Blob([bytes], { type: head.slice(5, head.indexOf(';')) });
}
