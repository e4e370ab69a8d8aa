/**
 * The soak (issue 11, point 6): mixed load on one app for minutes, 32 connections, 80 % GET by id,
 * 15 % lists of 200, 5 % lists of 999, VmRSS sampled every second. After a warm-up, RSS "at the
 * start" is the median of the first fifth of the samples and "at the end" the median of the last
 * fifth (medians, so one GC cycle's peak does not decide); it passes if the end is at most 10 %
 * above the start.
 */
import { load, memoryMB, type Server } from './harness.js';
import { median } from './rounds.js';

export interface SoakOptions {
  warmUp: number;
  seconds: number;
  connections: number;
  headers: Record<string, string>;
  byId: () => string;
  list: (size: number) => () => string;
}

export async function soak(app: Server, o: SoakOptions) {
  const [list200, list999] = [o.list(200), o.list(999)];
  const mixed = () => {
    const x = Math.random();
    return x < 0.8 ? o.byId() : x < 0.95 ? list200() : list999();
  };
  const pid = app.child.pid!;
  const atRest = memoryMB(pid).rss;
  await load(app, { connections: o.connections, seconds: o.warmUp, makePath: mixed, headers: o.headers });
  const samples: number[] = [];
  const anonSamples: number[] = [];
  const timer = setInterval(() => {
    const { rss, anon } = memoryMB(pid);
    samples.push(rss);
    anonSamples.push(anon);
  }, 1000);
  const loaded = await load(app, { connections: o.connections, seconds: o.seconds, makePath: mixed, headers: o.headers });
  clearInterval(timer);
  const fifth = Math.max(1, Math.floor(samples.length / 5));
  const start = median(samples.slice(0, fifth));
  const end = median(samples.slice(-fifth));
  const growth = end / start - 1;
  // The process's own memory alone: VmRSS also grows as the SQLite memory map touches more of the file.
  const anonStart = median(anonSamples.slice(0, fifth));
  const anonEnd = median(anonSamples.slice(-fifth));
  const failed = loaded.non2xx + loaded.errors;
  console.log(
    `\nsoak: ${o.seconds} s of mixed load after ${o.warmUp} s warm-up, ${loaded.reqPerSec.toFixed(0)} req/s, ${failed} failed; ` +
      `RSS at rest ${atRest.toFixed(0)} MB, start ${start.toFixed(0)} MB, end ${end.toFixed(0)} MB (${(growth * 100).toFixed(1)} %), peak ${loaded.maxRssMB.toFixed(0)} MB; ` +
      `RssAnon start ${anonStart.toFixed(0)} MB, end ${anonEnd.toFixed(0)} MB`,
  );
  return {
    pass: growth <= 0.1 && failed === 0,
    value: `${start.toFixed(0)} → ${end.toFixed(0)} MB (${growth >= 0 ? '+' : ''}${(growth * 100).toFixed(1)} %)${failed ? `, ${failed} failed` : ''}`,
    report: {
      warmUp: o.warmUp,
      seconds: o.seconds,
      connections: o.connections,
      mix: '80 % GET by id, 15 % list of 200, 5 % list of 999',
      atRestMB: atRest,
      startMB: start,
      endMB: end,
      growth,
      anonStartMB: anonStart,
      anonEndMB: anonEnd,
      anonGrowth: anonEnd / anonStart - 1,
      peakMB: loaded.maxRssMB,
      reqPerSec: loaded.reqPerSec,
      requests: loaded.requests,
      failed,
      samplesMB: samples.map((s) => Math.round(s)),
    },
  };
}
