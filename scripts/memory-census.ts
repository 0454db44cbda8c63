/**
 * What cms-shield's memory is after one full sync of a large site (docs/performance.md, "Memory").
 *
 *   npm run build && npx tsx scripts/memory-census.ts [--pages 100000] [--heap-snapshot out.heapsnapshot]
 *
 * Starts the bench's fake CMS (`bench/origin.ts`) with `--pages` pages and a cms-shield from
 * `dist/main.js` as the bench's `large` scenario does (no Redis, LOG_LEVEL=warn), waits for
 * `/readyz`, and then reports memory three ways:
 *
 * - `metrics`: RSS and heap used from `/metrics` one second after ready, as the bench reads them;
 * - `after gc`: `process.memoryUsage()` inside cms-shield after two full collections (it runs with
 *   `--expose-gc`; a preload, passed as a `data:` URL, collects when this process writes a number
 *   to a file, because a signal would stop cms-shield);
 * - `peak`: VmHWM from /proc.
 *
 * With `--heap-snapshot`, the preload also writes a V8 heap snapshot there after the collections;
 * `scripts/heap-summary.ts` sums it up.
 * @module
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { call, freePort, metricSum, sleep, waitFor } from '../bench/lib/http.js'
import { startOrigin } from '../bench/lib/origin-control.js'
import { BenchChild, processMemory, stopAllChildren } from '../bench/lib/processes.js'
import { shieldMetrics } from '../bench/lib/shield.js'

interface Collected {
  seq: number
  rss: number
  heapUsed: number
  heapTotal: number
  external: number
  arrayBuffers: number
  snapshot?: string
}

/** Collects twice when `<file>.gc` holds a number it has not answered yet, then writes the memory to `<file>`. */
function preloadSource(file: string, snapshotFile: string | undefined): string {
  return `
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { writeHeapSnapshot } from 'node:v8';
const FILE = ${JSON.stringify(file)};
const SNAPSHOT = ${JSON.stringify(snapshotFile ?? null)};
let done = 0;
setInterval(() => {
  let seq;
  try { seq = Number(readFileSync(FILE + '.gc', 'utf8')); } catch { return; }
  if (!(seq > done)) return;
  done = seq;
  globalThis.gc();
  globalThis.gc();
  const m = process.memoryUsage();
  const result = { seq, rss: m.rss, heapUsed: m.heapUsed, heapTotal: m.heapTotal, external: m.external, arrayBuffers: m.arrayBuffers };
  if (SNAPSHOT !== null) result.snapshot = writeHeapSnapshot(SNAPSHOT);
  writeFileSync(FILE + '.tmp', JSON.stringify(result));
  renameSync(FILE + '.tmp', FILE);
}, 200).unref();
`
}

const mib = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(0)} MiB`

const { values } = parseArgs({
  options: {
    pages: { type: 'string', default: '100000' },
    'heap-snapshot': { type: 'string' },
    /** Also read /metrics this many seconds after ready, before collecting (what the memory does at rest). */
    'rest': { type: 'string', default: '0' },
    /** Extra variables for cms-shield, e.g. `--env MALLOC_ARENA_MAX=2`. */
    env: { type: 'string', multiple: true, default: [] },
    /** Extra arguments for node before the entry point, e.g. `--node-arg=--max-semi-space-size=8`. */
    'node-arg': { type: 'string', multiple: true, default: [] },
  },
})
const pages = Number(values.pages)
const snapshotFile = values['heap-snapshot'] === undefined ? undefined : resolve(values['heap-snapshot'])
const workDir = mkdtempSync(join(tmpdir(), 'memory-census-'))
const censusFile = join(workDir, 'census.json')

try {
  const origin = await startOrigin(pages, undefined)
  const port = await freePort()
  const url = `http://127.0.0.1:${port}`
  const preload = `data:text/javascript,${encodeURIComponent(preloadSource(censusFile, snapshotFile))}`
  const started = Date.now()
  const shield = new BenchChild('cms-shield', ['--expose-gc', ...values['node-arg'], '--import', preload, 'dist/main.js'], {
    env: {
      UPSTREAM_URL: origin.api,
      BASE_URL: url,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      SYNC_INTERVAL: '24h',
      FULL_SYNC_INTERVAL: '168h',
      REFRESH_TOKEN: randomBytes(24).toString('hex'),
      CACHE_TTL: '24h',
      ...Object.fromEntries(values.env.map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)])),
    },
    stdoutFile: join(workDir, 'shield.log'),
  })
  await waitFor('cms-shield /readyz 200', 600_000, 100, async () => {
    if (!shield.alive) throw new Error(`cms-shield exited:\n${shield.output()}`)
    const response = await call(`${url}/readyz`, { timeoutMs: 2_000 })
    return response.status === 200 ? true : undefined
  })
  const readyS = (Date.now() - started) / 1000
  await sleep(1_000)
  const metrics = await shieldMetrics({ origin: url })
  const before = {
    rss: metricSum(metrics, 'cms_shield_process_resident_memory_bytes'),
    heapUsed: metricSum(metrics, 'cms_shield_nodejs_heap_size_used_bytes'),
    external: metricSum(metrics, 'cms_shield_nodejs_external_memory_bytes'),
  }
  const restS = Number(values.rest)
  let atRest: typeof before | undefined
  if (restS > 0) {
    await sleep(restS * 1000)
    const later = await shieldMetrics({ origin: url })
    atRest = {
      rss: metricSum(later, 'cms_shield_process_resident_memory_bytes'),
      heapUsed: metricSum(later, 'cms_shield_nodejs_heap_size_used_bytes'),
      external: metricSum(later, 'cms_shield_nodejs_external_memory_bytes'),
    }
  }
  writeFileSync(`${censusFile}.gc`, '1')
  const collected = await waitFor('the collection', 300_000, 200, async () => {
    try {
      return JSON.parse(readFileSync(censusFile, 'utf8')) as Collected
    } catch {
      return undefined
    }
  })
  const peak = processMemory(shield.pid)?.peakRss ?? 0
  const report = { pages, readyS, metrics: before, atRest, afterGc: collected, peakRss: peak }
  process.stdout.write(`${JSON.stringify(report)}\n`)
  process.stdout.write(
    `${pages} pages, ready ${readyS.toFixed(1)} s after spawn\n` +
      `  /metrics 1 s after ready: RSS ${mib(before.rss)}, heap used ${mib(before.heapUsed)}, external ${mib(before.external)}\n` +
      (atRest === undefined ? '' : `  /metrics ${restS} s after ready: RSS ${mib(atRest.rss)}, heap used ${mib(atRest.heapUsed)}, external ${mib(atRest.external)}\n`) +
      `  after two full GCs:       RSS ${mib(collected.rss)}, heap used ${mib(collected.heapUsed)}, heap total ${mib(collected.heapTotal)}, external ${mib(collected.external)}, arrayBuffers ${mib(collected.arrayBuffers)}\n` +
      `  peak RSS (VmHWM):         ${mib(peak)}\n` +
      (collected.snapshot === undefined ? '' : `  heap snapshot: ${collected.snapshot}\n`),
  )
} finally {
  await stopAllChildren()
}
