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
  /** V8's heap spaces (size and used bytes) just before and after the collections. */
  spacesBefore: Record<string, { size: number; used: number }>
  spacesAfter: Record<string, { size: number; used: number }>
  snapshot?: string
}

/** Collects twice when `<file>.gc` holds a number it has not answered yet, then writes the memory to `<file>`. */
function preloadSource(file: string, snapshotFile: string | undefined): string {
  return `
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { getHeapSpaceStatistics, writeHeapSnapshot } from 'node:v8';
const FILE = ${JSON.stringify(file)};
const SNAPSHOT = ${JSON.stringify(snapshotFile ?? null)};
let done = 0;
setInterval(() => {
  let seq;
  try { seq = Number(readFileSync(FILE + '.gc', 'utf8')); } catch { return; }
  if (!(seq > done)) return;
  done = seq;
  const spaces = () => Object.fromEntries(getHeapSpaceStatistics().map((s) => [s.space_name, { size: s.space_size, used: s.space_used_size }]));
  const spacesBefore = spaces();
  globalThis.gc();
  globalThis.gc();
  const m = process.memoryUsage();
  const result = { seq, rss: m.rss, heapUsed: m.heapUsed, heapTotal: m.heapTotal, external: m.external, arrayBuffers: m.arrayBuffers, spacesBefore, spacesAfter: spaces() };
  if (SNAPSHOT !== null) result.snapshot = writeHeapSnapshot(SNAPSHOT);
  writeFileSync(FILE + '.tmp', JSON.stringify(result));
  renameSync(FILE + '.tmp', FILE);
}, 200).unref();
`
}

/**
 * RSS by kind of mapping: the brk heap (malloc's main arena), file-backed, and anonymous ones (V8's
 * heap pages, malloc's other arenas, large mmap'ed allocations), with the largest anonymous ones.
 */
function smapsSummary(pid: number): string {
  const byKind = new Map<string, number>()
  const anonymous: { range: string; size: number; rss: number }[] = []
  let current: { range: string; name: string; size: number } | undefined
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const head = /^([0-9a-f]+-[0-9a-f]+) \S+ \S+ \S+ \S+\s*(.*)$/.exec(line)
    if (head) {
      const [from, to] = head[1]!.split('-').map((hex) => parseInt(hex, 16))
      current = { range: head[1]!, name: head[2]!.trim(), size: to! - from! }
      continue
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line)
    if (!rss || current === undefined) continue
    const bytes = Number(rss[1]) * 1024
    const kind = current.name === '' ? 'anonymous' : current.name.startsWith('[') ? current.name : 'file-backed'
    byKind.set(kind, (byKind.get(kind) ?? 0) + bytes)
    if (kind === 'anonymous') anonymous.push({ range: current.range, size: current.size, rss: bytes })
  }
  const kinds = [...byKind].sort((a, b) => b[1] - a[1]).map(([kind, bytes]) => `    ${kind}: ${mib(bytes)}\n`).join('')
  const top = anonymous.sort((a, b) => b.rss - a.rss).slice(0, 12).map((m) => `      ${m.range} size ${mib(m.size)} rss ${mib(m.rss)}\n`).join('')
  const sizes = new Map<number, { count: number; rss: number }>()
  for (const m of anonymous) {
    const group = sizes.get(m.size) ?? { count: 0, rss: 0 }
    group.count++
    group.rss += m.rss
    sizes.set(m.size, group)
  }
  const bySize = [...sizes].sort((a, b) => b[1].rss - a[1].rss).slice(0, 8).map(([size, g]) => `      ${g.count} × ${(size / 1024).toFixed(0)} KiB: rss ${mib(g.rss)}\n`).join('')
  return `${kinds}    anonymous by mapping size:\n${bySize}    largest anonymous:\n${top}`
}

const mib = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(0)} MiB`

const { values } = parseArgs({
  options: {
    pages: { type: 'string', default: '100000' },
    'heap-snapshot': { type: 'string' },
    /** Also read /metrics this many seconds after ready, before collecting (what the memory does at rest). */
    'rest': { type: 'string', default: '0' },
    /** Also print cms-shield's largest memory mappings (from /proc) 1 s after ready. */
    smaps: { type: 'boolean', default: false },
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
  const mappings = values.smaps ? smapsSummary(shield.pid) : undefined
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
      `  heap spaces before → after the collections (used / size):\n${Object.keys(collected.spacesBefore).map((name) => {
        const b = collected.spacesBefore[name]!
        const a = collected.spacesAfter[name]!
        return `    ${name}: ${mib(b.used)} / ${mib(b.size)} → ${mib(a.used)} / ${mib(a.size)}\n`
      }).join('')}` +
      `  peak RSS (VmHWM):         ${mib(peak)}\n` +
      (collected.snapshot === undefined ? '' : `  heap snapshot: ${collected.snapshot}\n`) +
      (mappings === undefined ? '' : `  mappings 1 s after ready (RSS by kind; largest anonymous ones):\n${mappings}`),
  )
} finally {
  await stopAllChildren()
}
