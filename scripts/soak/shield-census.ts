/**
 * A census inside cms-shield: its live timers, and its heap after a forced full GC on request.
 *
 * Timers. `nodejs_active_resources{type="Timeout"}` (prom-client, from
 * `process.getActiveResourcesInfo()`) counts only timers that keep the event loop alive, and
 * cms-shield unrefs its long-lived ones (the sync loop, the lease: src/app.ts, src/sync/*), so a
 * leak of those would never show there.
 *
 * So the soak starts cms-shield with one preload, passed as a `data:` URL so no file is added to the
 * shield and no TypeScript loader runs in it: it wraps `setTimeout`/`setInterval` (the global and
 * the `node:timers` exports, which `syncBuiltinESMExports` makes `import { setTimeout }` see too),
 * keeps every timer it hands out until the timer has fired or been cleared (Node sets `_destroyed`
 * then), and every second writes how many are alive, how many of those are ref'd, and the largest
 * groups by callback name and delay, to a file this process reads. Timers made inside undici (its
 * own timer wheel) and by `timers/promises` are not seen; a leak there would show as heap growth.
 *
 * Heap. Heap in use saws with the GC, so the surest sign of a leak is the heap right after a full
 * collection, at rest, before and after the soak. cms-shield runs with `--expose-gc` (nothing in it
 * calls `gc`), and when this process writes a number to `<file>.gc` the census runs two full
 * collections at its next tick and reports the heap after them. A file, not a signal: cms-shield
 * (close-with-grace) shuts down on SIGUSR2 as on SIGTERM.
 * @module
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { sleep } from '../../bench/lib/http.js'

export interface TimerCensus {
  /** Timers created and neither fired (one-shot) nor cleared. */
  live: number
  /** Of those, timers that keep the event loop alive. */
  refed: number
  /** Every timer created since start. */
  created: number
  /** The biggest groups of live timers: `callback name @ delay ms` → count. */
  groups: Record<string, number>
  /** Date.now() of the census. */
  at: number
  /** The last collection asked for through `<file>.gc`, and the memory right after it. */
  gc?: { seq: number; heapUsed: number; rss: number; external: number; at: number }
}

function preloadSource(file: string): string {
  return `
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import timers from 'node:timers';
import { promisify } from 'node:util';
const FILE = ${JSON.stringify(file)};
const live = new Set();
let created = 0;
let gcResult;
const originalInterval = timers.setInterval;
function track(make) {
  const wrapped = function (...args) {
    const timer = make.apply(this, args);
    created++;
    live.add(timer);
    return timer;
  };
  if (make[promisify.custom]) wrapped[promisify.custom] = make[promisify.custom];
  return wrapped;
}
timers.setTimeout = globalThis.setTimeout = track(timers.setTimeout);
timers.setInterval = globalThis.setInterval = track(timers.setInterval);
syncBuiltinESMExports();
function collectIfAsked() {
  let seq;
  try { seq = Number(readFileSync(FILE + '.gc', 'utf8')); } catch { return; }
  if (!(seq > (gcResult ? gcResult.seq : 0)) || typeof globalThis.gc !== 'function') return;
  globalThis.gc();
  globalThis.gc();
  const memory = process.memoryUsage();
  gcResult = { seq, heapUsed: memory.heapUsed, rss: memory.rss, external: memory.external, at: Date.now() };
}
function census() {
  collectIfAsked();
  let refed = 0;
  const groups = new Map();
  for (const timer of live) {
    if (timer._destroyed) { live.delete(timer); continue; }
    if (timer.hasRef()) refed++;
    const key = (timer._onTimeout && timer._onTimeout.name || 'anonymous') + ' @ ' + timer._idleTimeout + ' ms';
    groups.set(key, (groups.get(key) || 0) + 1);
  }
  const top = Object.fromEntries([...groups].sort((a, b) => b[1] - a[1]).slice(0, 8));
  try {
    writeFileSync(FILE + '.tmp', JSON.stringify({ live: live.size, refed, created, groups: top, at: Date.now(), gc: gcResult }));
    renameSync(FILE + '.tmp', FILE);
  } catch {}
}
originalInterval(census, 1000).unref();
`
}

/** Node arguments that load the census into the process, writing to `file`. */
export function censusArgs(file: string): string[] {
  return ['--expose-gc', '--import', `data:text/javascript,${encodeURIComponent(preloadSource(file))}`]
}

/** The last census written, or undefined when there is none (yet) or it cannot be read. */
export function readTimerCensus(file: string): TimerCensus | undefined {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as TimerCensus
  } catch {
    return undefined
  }
}

let gcSeq = 0

/** Asks for two full collections and returns the memory right after them (undefined if none came within `timeoutMs`). */
export async function collectGarbage(file: string, timeoutMs = 10_000): Promise<NonNullable<TimerCensus['gc']> | undefined> {
  const seq = ++gcSeq
  writeFileSync(`${file}.gc`, String(seq))
  const until = Date.now() + timeoutMs
  while (Date.now() < until) {
    const gc = readTimerCensus(file)?.gc
    if (gc !== undefined && gc.seq >= seq) return gc
    await sleep(200)
  }
  return undefined
}
