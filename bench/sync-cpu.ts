/**
 * What a sync costs cms-shield in CPU: for each page count, a fresh cms-shield against the fake CMS
 * (`bench/origin.ts`) answering in 0 ms. Reported per count: spawn to `/readyz` 200, the shield's
 * CPU (utime + stime from /proc) from spawn to ready ÷ pages, the fake CMS's CPU over the same
 * time (it shares the machine's cores), RSS once ready; then `SYNC_CPU_WALKS` (3) unchanged
 * listing walks (`PURGE /nowhere/`, as the `sync` scenario triggers one), each one's CPU ÷ pages
 * and the median, and RSS after them.
 *
 *   npm run build && npx tsx bench/sync-cpu.ts
 *
 * `SYNC_CPU_PAGES` (`10000,100000`): the counts. `SYNC_CPU_NODE_ARGS`: node flags for cms-shield
 * (`--max-semi-space-size=32`, say). `SYNC_CPU_ENTRY`: another build's entry
 * (`dist/main.js` of this checkout otherwise), for an A/B run. `SYNC_CPU_PROFILE=1`: cms-shield runs with
 * `--cpu-prof` and the functions with the most self time are printed per count (`PROFILE_TOP`, 30).
 * Unpinned: both processes may use both cores, as in production on a small machine.
 * @module
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { startOrigin } from './lib/origin-control.js'
import { stopAllChildren } from './lib/processes.js'
import { startShield } from './lib/shield.js'
import { measureSyncCpu, median, usPerPage } from './lib/sync-cpu.js'

interface ProfileNode { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }
interface Profile { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[] }

const counts = (process.env['SYNC_CPU_PAGES'] ?? '10000,100000').split(',').map((text) => Number(text.trim()))
if (counts.some((n) => !Number.isInteger(n) || n < 2 || n > 1_000_000)) throw new Error('SYNC_CPU_PAGES: integers from 2 to 1000000, comma-separated')
const walks = Math.min(10, Math.max(1, Number(process.env['SYNC_CPU_WALKS'] ?? '3')))
const profiling = process.env['SYNC_CPU_PROFILE'] === '1'
const top = Number(process.env['PROFILE_TOP'] ?? '30')
const nodeArgs = (process.env['SYNC_CPU_NODE_ARGS'] ?? '').split(/\s+/).filter(Boolean)

const mb = (bytes: number | undefined): string => (bytes === undefined ? 'n/a' : `${(bytes / 1_048_576).toFixed(0)} MB`)
const us = (seconds: number, pages: number): string => `${usPerPage(seconds, pages).toFixed(1)} µs/page`
const out = (line: string): void => void process.stdout.write(`${line}\n`)

/** Self time by function, busiest first, as lines of "share  function file:line". */
function profileSummary(dir: string): string[] {
  const file = readdirSync(dir).find((name) => name.endsWith('.cpuprofile'))
  if (!file) return [`(no profile in ${dir})`]
  const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as Profile
  const self = new Map<string, number>()
  const byId = new Map(profile.nodes.map((node) => [node.id, node]))
  profile.samples.forEach((id, i) => {
    const frame = byId.get(id)!.callFrame
    const key = `${frame.functionName || '(anonymous)'} ${frame.url.replace(/^.*\/(node_modules|src|dist|lib)\//, '$1/')}:${frame.lineNumber + 1}`
    self.set(key, (self.get(key) ?? 0) + (profile.timeDeltas[i] ?? 0))
  })
  const total = [...self.values()].reduce((a, b) => a + b, 0)
  const busy = total - (self.get('(idle) :0') ?? 0)
  return [
    `profile ${join(dir, file)}: busy ${(busy / 1000).toFixed(0)} ms of ${(total / 1000).toFixed(0)} ms`,
    ...[...self.entries()]
      .filter(([key]) => !key.startsWith('(idle)'))
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([key, time]) => `${((time / busy) * 100).toFixed(1).padStart(5)}%  ${key}`),
  ]
}

out(`sync-cpu: ${process.env['SYNC_CPU_ENTRY'] ?? 'dist/main.js'}, pages ${counts.join(', ')}; load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}`)
const origin = await startOrigin(2, undefined)
try {
  for (const pages of counts) {
    const dir = mkdtempSync(join(tmpdir(), 'cms-shield-sync-cpu-'))
    const entry = process.env['SYNC_CPU_ENTRY']
    const settings = { workDir: dir, cpu: undefined, shieldEnv: {}, ...(entry ? { entry } : {}), nodeArgs: [...nodeArgs, ...(profiling ? ['--cpu-prof', `--cpu-prof-dir=${dir}`] : [])] }
    const result = await measureSyncCpu(origin, pages, walks, () => startShield(settings, 'cms-shield', origin, 'warn', 600_000))
    out(`${result.pages} pages: ready ${result.readyS.toFixed(2)} s after spawn; shield CPU ${result.shieldCpuS.toFixed(2)} s = ${us(result.shieldCpuS, result.pages)} (spawn to ready, startup included); fake CMS CPU ${result.originCpuS.toFixed(2)} s = ${us(result.originCpuS, result.pages)}; RSS ${mb(result.rssReadyBytes)}`)
    result.walkCpuS.forEach((cpu, i) => {
      out(`  unchanged listing walk ${i + 1}: ${(result.walkS[i] as number).toFixed(2)} s, shield CPU ${(cpu * 1000).toFixed(0)} ms = ${us(cpu, result.pages)} (its /metrics polls included)`)
    })
    out(`  walk median ${us(median(result.walkCpuS), result.pages)}; RSS after ${mb(result.rssAfterBytes)} (peak ${mb(result.peakRssBytes)})`)
    if (profiling) for (const line of profileSummary(dir)) out(`  ${line}`)
    else rmSync(dir, { recursive: true, force: true })
  }
} finally {
  await stopAllChildren()
}
