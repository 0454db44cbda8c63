/**
 * `sync-cpu`: for each of `BENCH_SYNC_CPU_PAGES` (10,000 and 100,000), a fresh cms-shield against
 * the fake CMS answering in 0 ms: its CPU per page from spawn to ready, spawn to ready, and the
 * CPU per page of an unchanged listing walk (`lib/sync-cpu.ts`). See bench/README.md, scenario
 * `sync-cpu`; `bench/sync-cpu.ts` runs the same measurement unpinned, with a profile on request.
 * @module
 */
import type { BenchContext } from '../lib/context.js'
import { check, fmtInt, verdict } from '../lib/report.js'
import { round } from '../lib/stats.js'
import { measureSyncCpu, median, usPerPage } from '../lib/sync-cpu.js'

/** Unchanged listing walks per count: the first after a sync also builds the snapshot's html_url index. */
const WALKS = 3

export async function syncCpuScenario(ctx: BenchContext): Promise<void> {
  const { config, origin } = ctx
  const { rows, results, addCheck, log, skip } = ctx.recorder
  const measured: Record<string, unknown> = {}
  results.syncCpu = measured
  for (const pages of config.syncCpuPages) {
    const title = `full sync CPU: ${fmtInt(pages)} pages, CMS at 0 ms`
    if (ctx.schedule.spareMs('sync-cpu') < 20_000 + pages * 0.6) {
      skip(title, 'not enough time left before BENCH_MAX_SECONDS')
      continue
    }
    await ctx.pacing.quiet('sync-cpu', title)
    log(`${title}: starting a fresh cms-shield`)
    const result = await measureSyncCpu(origin, pages, WALKS, () => ctx.startShield(`cms-shield-sync-cpu-${pages}`, 'warn', Math.max(60_000, pages * 3)))
    const syncUs = usPerPage(result.shieldCpuS, pages)
    const walkUs = usPerPage(median(result.walkCpuS.slice(1)), pages)
    measured[String(pages)] = { ...result, syncUsPerPage: round(syncUs, 1), walkUsPerPage: round(walkUs, 1) }
    // The targets are set at 100,000 pages; a smaller tree's figure carries more of the start.
    const cpuCheck = pages >= 100_000 ? addCheck(check(`sync CPU per page at ${fmtInt(pages)}`, syncUs, '<=', 150)) : undefined
    const readyCheck = pages >= 100_000 ? addCheck(check(`ready at ${fmtInt(pages)} pages, s`, result.readyS, '<=', 20)) : undefined
    const row = (scenario: string, shield: string, target: string, met: string) => ({ scenario, shield, fastify: '—', node: '—', vsFastify: '—', vsNode: '—', target, met })
    rows.push(row(`${title}: shield CPU per page, spawn to ready`, `${syncUs.toFixed(1)} µs (${result.shieldCpuS.toFixed(2)} s; the fake CMS ${usPerPage(result.originCpuS, pages).toFixed(1)} µs)`, pages >= 100_000 ? '≤ 150 µs' : '—', cpuCheck ? verdict(cpuCheck) : '—'))
    rows.push(row(`${title}: spawn to ready`, `${result.readyS.toFixed(2)} s`, pages >= 100_000 ? '≤ 20 s' : '—', readyCheck ? verdict(readyCheck) : '—'))
    rows.push(row(`${title}: unchanged listing walk, CPU per page`, `${walkUs.toFixed(1)} µs (median of walks 2–${WALKS}; the first, with the html_url index, ${usPerPage(result.walkCpuS[0] ?? Number.NaN, pages).toFixed(1)} µs)`, 'a few µs', '—'))
  }
}
