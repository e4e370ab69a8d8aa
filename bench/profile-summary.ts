/**
 * What costs the time in a V8 .cpuprofile (node --cpu-prof): the top functions by self time, self
 * time by area (app code, each package, node core, GC, native) and the app's own functions by
 * inclusive time. Percentages are of busy time (idle excluded).
 * `node dist/bench/profile-summary.js <file.cpuprofile> [top]`
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
export interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  startTime: number;
  endTime: number;
}

function shortUrl(url: string): string {
  const file = url.replace(/^file:\/\//, '');
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)\/(.*)$/.exec(file);
  if (pkg) return `${pkg[1]}/${pkg[2]}`;
  const own = /\/dist\/((?:src|bench)\/.*)$/.exec(file);
  return own ? own[1]! : file;
}

function areaOf({ functionName, url }: ProfileNode['callFrame']): string {
  if (!url) return functionName.startsWith('(') ? functionName : '(native: builtins, JSON, crypto, sqlite)';
  if (url.startsWith('node:')) return 'node core';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (pkg) return pkg[1]!;
  if (url.includes('/dist/src/')) return 'app (src/)';
  return url.includes('/dist/bench/') ? 'bench harness' : 'other';
}

function keyOf({ functionName, url, lineNumber }: ProfileNode['callFrame']): string {
  return url ? `${functionName || '(anonymous)'}  ${shortUrl(url)}:${lineNumber + 1}` : functionName || '(anonymous)';
}

function table(title: string, counts: Map<string, number>, busy: number, top: number): string {
  const rows = [...counts].sort((a, b) => b[1] - a[1]).slice(0, top);
  return [title, ...rows.map(([key, n]) => `  ${((100 * n) / busy).toFixed(1).padStart(5)}%  ${key}`)].join('\n');
}

export function summariseProfile(profile: CpuProfile, top = 15): string {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

  const self = new Map<string, number>();
  const areas = new Map<string, number>();
  const inclusive = new Map<string, number>();
  let idle = 0;
  for (const id of profile.samples) {
    const frame = byId.get(id)!.callFrame;
    if (frame.functionName === '(idle)') {
      idle++;
      continue;
    }
    self.set(keyOf(frame), (self.get(keyOf(frame)) ?? 0) + 1);
    areas.set(areaOf(frame), (areas.get(areaOf(frame)) ?? 0) + 1);
    // Inclusive: every app function on this sample's stack, once even when recursive.
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const f = byId.get(at)!.callFrame;
      if (f.url.includes('/dist/src/')) seen.add(keyOf(f));
    }
    for (const key of seen) inclusive.set(key, (inclusive.get(key) ?? 0) + 1);
  }
  const busy = profile.samples.length - idle;
  const seconds = (profile.endTime - profile.startTime) / 1e6;
  return [
    `${seconds.toFixed(1)} s profiled, ${profile.samples.length} samples, ${((100 * idle) / profile.samples.length).toFixed(0)}% idle`,
    table(`Top ${top} functions by self time (% of busy)`, self, busy, top),
    table('Self time by area', areas, busy, 12),
    table('App functions by inclusive time', inclusive, busy, 12),
  ].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [file, top] = process.argv.slice(2);
  if (!file) {
    console.error(`usage: node ${path.relative(process.cwd(), process.argv[1])} <file.cpuprofile> [top]`);
    process.exit(2);
  }
  console.log(summariseProfile(JSON.parse(readFileSync(file, 'utf8')), Number(top ?? 15)));
}
