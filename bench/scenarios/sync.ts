/**
 * `sync`: a fresh cms-shield against `BENCH_SYNC_PAGES` pages with `BENCH_SYNC_LATENCY_MS` of
 * origin latency. It times the first full sync against the ideal and counts its CMS requests, then
 * two resyncs with nothing changed: `PURGE /nowhere/` (a listing pass only) and the webhook with
 * one id (a listing pass and that detail). See bench/README.md, scenario `sync`.
 * @module
 */
import { ORIGIN_PAGE_SIZE, SYNC_CONCURRENCY } from '../lib/config.js'
import type { BenchContext } from '../lib/context.js'
import { call, metricSum, postJson, sleep } from '../lib/http.js'
import { originHits, resetHits, setLatency } from '../lib/origin-control.js'
import type { SiteInfo } from '../lib/origin-control.js'
import { check, fmtInt, fmtRatio, verdict } from '../lib/report.js'
import { idealSyncS } from '../lib/schedule.js'
import { afterOneSync, shieldIdle, shieldMetrics } from '../lib/shield.js'
import { round } from '../lib/stats.js'

export async function syncScenario(ctx: BenchContext): Promise<void> {
  const { config, origin, startShield } = ctx
  const { rows, results, addCheck, log, skip } = ctx.recorder
  const { spareMs, remainingMs } = ctx.schedule
  const { quiet } = ctx.pacing
  const n = config.syncPages
  const title = `full sync: ${fmtInt(n)} pages, ${config.syncLatencyMs} ms origin latency, SYNC_CONCURRENCY ${SYNC_CONCURRENCY}`
  const listingPages = Math.ceil(n / ORIGIN_PAGE_SIZE)
  const idealS = idealSyncS(config)
  if (spareMs('sync') < idealS * 1000 + 20_000) {
    skip(title, 'not enough time left before BENCH_MAX_SECONDS')
    return
  }
  const site = await postJson<SiteInfo>(`${origin.control}/site`, { pages: n })
  await setLatency(origin, config.syncLatencyMs)
  await quiet('sync', 'sync')
  await resetHits(origin)
  log(`${title}: starting a fresh cms-shield (ideal ${idealS.toFixed(1)} s)`)
  const shield = await startShield('cms-shield-sync', 'warn', Math.min(remainingMs() - 20_000, Math.max(60_000, idealS * 10_000)))
  try {
    const metrics = await shieldMetrics(shield)
    const syncS = metricSum(metrics, 'cms_shield_sync_duration_seconds_sum')
    const fullHits = await originHits(origin)
    const timeCheck = addCheck(check('full sync / ideal', syncS / idealS, '<=', 1.2))
    results.sync = { pages: site.pages, idealS, syncS, readyAfterMs: round(shield.readyAfterMs, 0), cmsRequests: fullHits }
    rows.push({
      scenario: `${title}: time`,
      shield: `sync ${syncS.toFixed(2)} s (ready ${(shield.readyAfterMs / 1000).toFixed(2)} s after spawn); ideal ${idealS.toFixed(2)} s = N·latency/concurrency + ${listingPages} listing pages → ${fmtRatio(syncS / idealS)}`,
      fastify: '—',
      node: '—',
      vsFastify: '—',
      vsNode: '—',
      target: '≤ 1.2x ideal',
      met: verdict(timeCheck),
    })
    rows.push({
      scenario: `${title}: CMS requests`,
      shield: `${fmtInt(fullHits.total)} (${fmtInt(fullHits.detail)} detail, ${fullHits.list} list, ${fullHits.find} find, ${fullHits.other} other)`,
      fastify: '—',
      node: '—',
      vsFastify: '—',
      vsNode: '—',
      target: `— (${fmtInt(n)} details + ${listingPages} listing pages + probes)`,
      met: '—',
    })

    await shieldIdle(shield, 30_000)
    const bound = listingPages + 2
    await resetHits(origin)
    const purgeMs = await afterOneSync(shield, 60_000, async () => {
      const response = await call(`${shield.origin}/nowhere/`, { method: 'PURGE' })
      if (response.status !== 200) throw new Error(`PURGE /nowhere/: ${response.status} ${response.body.toString('utf8')}`)
    })
    await sleep(200)
    const resyncHits = await originHits(origin)
    const resyncCheck = addCheck(check('no-change resync: CMS requests', resyncHits.total, '<=', bound))

    await shieldIdle(shield, 30_000)
    await resetHits(origin)
    const oneId = site.sampleIds[Math.floor(site.sampleIds.length / 2)] as number
    const webhookMs = await afterOneSync(shield, 60_000, async () => {
      const response = await call(`${shield.origin}/-/refresh`, {
        method: 'POST',
        headers: { authorization: `Bearer ${shield.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ ids: [oneId] }),
      })
      if (response.status !== 202) throw new Error(`POST /-/refresh: ${response.status} ${response.body.toString('utf8')}`)
    })
    await sleep(200)
    const webhookHits = await originHits(origin)
    const webhookCheck = addCheck(check('webhook one id: CMS requests less the one detail', webhookHits.total - 1, '<=', bound))
    results.resync = { purge: { cmsRequests: resyncHits, ms: round(purgeMs, 0) }, webhook: { id: oneId, cmsRequests: webhookHits, ms: round(webhookMs, 0) }, bound }
    rows.push({
      scenario: `no-change resync of ${fmtInt(n)} pages (PURGE /nowhere/): CMS requests`,
      shield: `${resyncHits.total} (${resyncHits.list} list, ${resyncHits.detail} detail) in ${(purgeMs / 1000).toFixed(2)} s`,
      fastify: '—',
      node: '—',
      vsFastify: '—',
      vsNode: '—',
      target: `≤ ceil(N/${ORIGIN_PAGE_SIZE}) + 2 = ${bound}`,
      met: verdict(resyncCheck),
    })
    rows.push({
      scenario: `no-change resync via webhook {"ids":[${oneId}]}: CMS requests − 1 detail`,
      shield: `${webhookHits.total - 1} (${webhookHits.list} list, ${webhookHits.detail} detail) in ${(webhookMs / 1000).toFixed(2)} s`,
      fastify: '—',
      node: '—',
      vsFastify: '—',
      vsNode: '—',
      target: `≤ ${bound}`,
      met: verdict(webhookCheck),
    })
  } finally {
    await shield.child.stop()
    await setLatency(origin, 0).catch(() => undefined)
  }
}
