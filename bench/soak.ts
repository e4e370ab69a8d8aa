/**
 * The soak (issue 11, point 6): mixed load on one app for minutes, 32 connections, 80 % GET by id,
 * 15 % lists of 200, 5 % lists of 999, VmRSS sampled every second. The target is about growth,
 * memory the process keeps: after the warm-up and again after the load, the app makes a full
 * collection (collectGarbage) and its VmRSS is read; it passes if the end is at most 10 % above
 * the start. The samples under load rise and fall in a saw-tooth, each fall a full collection
 * (bench/README.md, 2026-11-25 16:02): the medians of their first and last fifths, printed beside
 * it, say where in a tooth each fifth fell as much as whether anything grew (+5.8 % and +17.8 %
 * in two runs whose lowest points did not rise).
 */
import { collectGarbage, load, memoryMB, type Server } from './harness.js';
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
  await collectGarbage(app);
  const collectedStart = memoryMB(pid);
  const samples: number[] = [];
  const anonSamples: number[] = [];
  const timer = setInterval(() => {
    const { rss, anon } = memoryMB(pid);
    samples.push(rss);
    anonSamples.push(anon);
  }, 1000);
  const loaded = await load(app, { connections: o.connections, seconds: o.seconds, makePath: mixed, headers: o.headers });
  clearInterval(timer);
  await collectGarbage(app);
  const collectedEnd = memoryMB(pid);
  const growth = collectedEnd.rss / collectedStart.rss - 1;
  const fifth = Math.max(1, Math.floor(samples.length / 5));
  const start = median(samples.slice(0, fifth));
  const end = median(samples.slice(-fifth));
  // The process's own memory alone: VmRSS also grows as the SQLite memory map touches more of the file.
  const anonStart = median(anonSamples.slice(0, fifth));
  const anonEnd = median(anonSamples.slice(-fifth));
  const failed = loaded.non2xx + loaded.errors;
  console.log(
    `\nsoak: ${o.seconds} s of mixed load after ${o.warmUp} s warm-up, ${loaded.reqPerSec.toFixed(0)} req/s, ${failed} failed; ` +
      `RSS at rest ${atRest.toFixed(0)} MB; after a full collection, start ${collectedStart.rss.toFixed(0)} MB, end ${collectedEnd.rss.toFixed(0)} MB ` +
      `(${(growth * 100).toFixed(1)} %; RssAnon ${collectedStart.anon.toFixed(0)} → ${collectedEnd.anon.toFixed(0)} MB); ` +
      `under load, medians of the first and last fifths ${start.toFixed(0)} → ${end.toFixed(0)} MB (RssAnon ${anonStart.toFixed(0)} → ${anonEnd.toFixed(0)} MB), ` +
      `lowest ${Math.min(...samples).toFixed(0)} MB, peak ${loaded.maxRssMB.toFixed(0)} MB`,
  );
  return {
    pass: growth <= 0.1 && failed === 0,
    value: `${collectedStart.rss.toFixed(0)} → ${collectedEnd.rss.toFixed(0)} MB (${growth >= 0 ? '+' : ''}${(growth * 100).toFixed(1)} %)${failed ? `, ${failed} failed` : ''}`,
    report: {
      warmUp: o.warmUp,
      seconds: o.seconds,
      connections: o.connections,
      mix: '80 % GET by id, 15 % list of 200, 5 % list of 999',
      atRestMB: atRest,
      collectedStartMB: collectedStart.rss,
      collectedEndMB: collectedEnd.rss,
      collectedAnonStartMB: collectedStart.anon,
      collectedAnonEndMB: collectedEnd.anon,
      growth,
      startMB: start,
      endMB: end,
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
