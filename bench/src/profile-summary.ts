#!/usr/bin/env node
// node bench/dist/profile-summary.js FILE.cpuprofile [TOP]
// Self time per function and per package of a V8 CPU profile: where a process spends its CPU.
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

/** `express`, `@bmaas/api`, `node:internal`, `(program)`, … from a call frame's URL. */
export function packageOf(url: string, functionName: string): string {
  if (!url) return functionName.startsWith('(') ? functionName : '(native)';
  if (url.startsWith('node:')) return 'node:internal';
  const modules = /node_modules\/((?:@[^/]+\/)?[^/]+)\/(?!.*node_modules)/.exec(url);
  if (modules) return modules[1] as string;
  const workspace = /\/(packages|bench)\/([^/]+)\//.exec(url);
  if (workspace) return workspace[1] === 'bench' ? 'bench' : `@bmaas/${workspace[2]}`;
  return url;
}

export interface ProfileSummary {
  totalMs: number;
  byFunction: Array<{ name: string; ms: number }>;
  byPackage: Array<{ name: string; ms: number }>;
}

/** Self time from the samples (each sample's time delta charged to its node). */
export function summariseProfile(profile: CpuProfile): ProfileSummary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  for (let i = 0; i < samples.length; i++) {
    const id = samples[i] as number;
    selfUs.set(id, (selfUs.get(id) ?? 0) + (deltas[i + 1] ?? deltas[i] ?? 0));
  }
  const functions = new Map<string, number>();
  const packages = new Map<string, number>();
  let total = 0;
  for (const [id, us] of selfUs) {
    const node = byId.get(id);
    if (!node) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    const where = url ? `${url.replace(/^.*\/(node_modules|packages|bench)\//, '')}:${lineNumber + 1}` : '';
    const key = `${functionName || '(anonymous)'} ${where}`.trim();
    functions.set(key, (functions.get(key) ?? 0) + us);
    const pkg = packageOf(url, functionName);
    packages.set(pkg, (packages.get(pkg) ?? 0) + us);
    total += us;
  }
  const sorted = (map: Map<string, number>) =>
    [...map].map(([name, us]) => ({ name, ms: us / 1000 })).sort((a, b) => b.ms - a.ms);
  return { totalMs: total / 1000, byFunction: sorted(functions), byPackage: sorted(packages) };
}

function main(): void {
  const [file, topText] = process.argv.slice(2);
  if (!file) {
    process.stderr.write('usage: profile-summary.js FILE.cpuprofile [TOP]\n');
    process.exit(2);
  }
  const top = Number(topText ?? 25);
  const summary = summariseProfile(JSON.parse(readFileSync(file, 'utf8')) as CpuProfile);
  const pct = (ms: number) => `${((ms / summary.totalMs) * 100).toFixed(1).padStart(5)}%`;
  const out: string[] = [`${file}: ${(summary.totalMs / 1000).toFixed(1)} s sampled`, '', 'by package:'];
  for (const p of summary.byPackage.slice(0, 15)) out.push(`  ${pct(p.ms)}  ${p.name}`);
  out.push('', 'by function (self time):');
  for (const f of summary.byFunction.slice(0, top)) out.push(`  ${pct(f.ms)}  ${f.name}`);
  process.stdout.write(`${out.join('\n')}\n`);
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].replace(/^.*\//, '/'))) main();
