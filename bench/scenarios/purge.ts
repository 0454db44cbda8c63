/**
 * `purge`: how soon a CMS edit reaches the CDN. A three-instance cluster with a private Redis (one
 * syncs, two follow) purges a recording stand-in for Varnish (CDN_PURGE_VARNISH) after each
 * synced change; `BENCH_PURGE_EDITS` single-page edits (a new title on the fake CMS, then a PURGE
 * of that page at the syncing instance) go out one after the other, each waited for until the
 * recorder holds a purge naming the page's key. Once at the 89-page site and once at
 * `BENCH_PAGES_LARGE`. Swap → acknowledged lag is read exactly from the syncing instance's
 * `cdn purge: acknowledged` log lines (`lagMs`, which includes the purge gate's wait for the
 * followers); edit → purge received is timed by the harness. See bench/README.md, scenario `purge`.
 * @module
 */
import { readFileSync } from 'node:fs'
import { performance } from 'node:perf_hooks'
import { startCluster } from '../lib/cluster.js'
import type { BenchContext } from '../lib/context.js'
import { call, postJson, sleep, waitFor } from '../lib/http.js'
import type { MetricSample } from '../lib/http.js'
import { setLatency } from '../lib/origin-control.js'
import type { SiteInfo } from '../lib/origin-control.js'
import { check, fmtInt, fmtMs, verdict } from '../lib/report.js'
import { shieldMetrics } from '../lib/shield.js'
import { percentileOfSorted } from '../lib/stats.js'
import { startVarnishRecorder } from '../lib/varnish-recorder.js'
import { purgePrecision } from './purge-precision.js'

/** The product's promise: an edit shows through the CDN within about a second. */
const LAG_TARGET_MS = 1_000
/** The seed site's size, the bench origin's smallest realistic tree. */
export const PURGE_SMALL_PAGES = 89
const WARMUP_EDITS = 3
/** After the last edit, how long more purges may still arrive (a follower's would be a bug). */
const SETTLE_MS = 1_500

interface Acknowledged {
  lagMs: number
  keys: number
}

/** The syncing instance's `cdn purge: acknowledged` lines, in order (pino JSON, one per line). */
function acknowledgedLines(logFile: string): Acknowledged[] {
  const found: Acknowledged[] = []
  for (const line of readFileSync(logFile, 'utf8').split('\n')) {
    if (!line.includes('cdn purge: acknowledged')) continue
    try {
      const entry = JSON.parse(line) as { msg?: string; lagMs?: number; keys?: number }
      if (entry.msg === 'cdn purge: acknowledged' && typeof entry.lagMs === 'number') found.push({ lagMs: entry.lagMs, keys: entry.keys ?? Number.NaN })
    } catch {
      // A line cut by the process's end: not one of ours.
    }
  }
  return found
}

/** `cms_shield_cdn_purge_gate_total` by result: how each wait for the followers ended. */
function gateResults(samples: readonly MetricSample[]): Record<string, number> {
  const found: Record<string, number> = {}
  for (const sample of samples) {
    if (sample.name === 'cms_shield_cdn_purge_gate_total') found[sample.labels.result ?? '?'] = sample.value
  }
  return found
}

const sorted = (values: readonly number[]): number[] => values.filter(Number.isFinite).sort((a, b) => a - b)

export async function purgeScenario(ctx: BenchContext, edits: number): Promise<void> {
  for (const pages of [PURGE_SMALL_PAGES, ctx.config.largePages]) await purgeAt(ctx, pages, edits)
}

async function purgeAt(ctx: BenchContext, pages: number, edits: number): Promise<void> {
  const { origin } = ctx
  const { rows, results, addCheck, log } = ctx.recorder
  const title = `${fmtInt(pages)} pages, 3 instances + Redis`
  const site = await postJson<SiteInfo>(`${origin.control}/site`, { pages }, 120_000)
  await setLatency(origin, 0)
  log(`${title}: origin regenerated in ${site.generatedMs ?? '?'} ms; starting the Varnish recorder, Redis and three instances`)
  const varnish = await startVarnishRecorder()
  const label = `purge-${pages}`
  try {
    // The harness reads every answer the CDN holds, as one client: the per-client share of the CMS
    // budget (there so that one reader cannot take it all) would hold it for minutes at the
    // `find/` 404s a move leaves behind, which cms-shield must confirm with the CMS.
    const budget = { READ_THROUGH_RATE: '50', READ_THROUGH_BURST: '100', READ_THROUGH_CLIENT_RATE: '50', READ_THROUGH_CLIENT_BURST: '100' }
    const cluster = await startCluster(ctx, label, { CDN_PURGE_VARNISH: varnish.url, ...budget }, 'info')
    const { leader } = cluster
    try {
      log(`  ready: leader ${(leader.readyAfterMs / 1000).toFixed(1)} s after spawn; ${varnish.purges.length} purges before the first edit`)
      const editOnce = async (): Promise<{ id: number; endToEndMs: number; purgesSeen: number; missing: string[]; keys: number }> => {
        // The keys the page's detail carries (less `cms-pages`, the dialect key, which no edit
        // purges): the purge must name one of them, or the CDN keeps the old detail.
        const edit = await postJson<{ id: number; title: string; path: string }>(`${origin.control}/edit`, {}, 5_000)
        const pageKey = `cms-page-${edit.id}`
        const before = varnish.purges.length
        const sent = performance.now()
        const purge = await call(`${leader.origin}${edit.path}`, { method: 'PURGE', timeoutMs: 5_000 })
        if (purge.status !== 200) throw new Error(`PURGE ${edit.path}: ${purge.status}`)
        const received = await waitFor(`the CDN purged ${pageKey}`, 30_000, 2, async () =>
          varnish.purges.slice(before).find((each) => each.keys.includes(pageKey)))
          .catch((error: unknown) => (log(`  ${error instanceof Error ? error.message : String(error)}`), undefined))
        const detail = await call(`${leader.origin}${edit.path}`, { timeoutMs: 5_000 })
        const carried = (detail.headers.get('surrogate-key') ?? '').split(/\s+/).filter((key) => key !== '' && key !== 'cms-pages')
        const purgedKeys = new Set(varnish.purges.slice(before).flatMap((each) => each.keys))
        return {
          id: edit.id,
          endToEndMs: received ? received.at - sent : Number.NaN,
          purgesSeen: varnish.purges.length - before,
          missing: received && carried.some((key) => purgedKeys.has(key)) ? [] : [pageKey],
          keys: received?.keys.length ?? Number.NaN,
        }
      }
      for (let i = 0; i < WARMUP_EDITS; i++) await editOnce()
      await sleep(SETTLE_MS)
      const gateBefore = gateResults(await shieldMetrics(leader))
      const ackBefore = acknowledgedLines(leader.logFile).length
      const purgesBefore = varnish.purges.length
      const done: Awaited<ReturnType<typeof editOnce>>[] = []
      for (let i = 0; i < edits; i++) done.push(await editOnce())
      await sleep(SETTLE_MS)
      const purgesTotal = varnish.purges.length - purgesBefore
      const gateAfter = gateResults(await shieldMetrics(leader))
      const gate = Object.entries(gateAfter).map(([result, count]) => `${result} ${count - (gateBefore[result] ?? 0)}`).join(', ')
      const acknowledged = acknowledgedLines(leader.logFile).slice(ackBefore)
      const lag = sorted(acknowledged.map((each) => each.lagMs))
      const endToEnd = sorted(done.map((each) => each.endToEndMs))
      const keys = sorted(varnish.purges.slice(purgesBefore).map((each) => each.keys.length))
      const unseen = done.filter((each) => !Number.isFinite(each.endToEndMs)).length
      const missingKeys = done.reduce((sum, each) => sum + each.missing.length, 0)
      const perEdit = purgesTotal / edits
      const lagP50 = percentileOfSorted(lag, 50)
      const lagP99 = lag.length > 0 ? percentileOfSorted(lag, 99) : Number.POSITIVE_INFINITY
      const e2eP50 = percentileOfSorted(endToEnd, 50)
      const e2eP99 = unseen > 0 ? Number.POSITIVE_INFINITY : percentileOfSorted(endToEnd, 99)
      log(`  ${edits} edits: swap → acknowledged ${fmtMs(lagP50)} p50, ${fmtMs(lagP99)} p99 (${lag.length} log lines); PURGE → received ${fmtMs(e2eP50)} p50, ${fmtMs(e2eP99)} p99${unseen > 0 ? `, ${unseen} never` : ''}; keys per purge ${percentileOfSorted(keys, 50)} median, ${keys.at(-1)} max; ${purgesTotal} purges (${perEdit.toFixed(2)} per edit), ${missingKeys} details not purged; purge gate: ${gate}`)
      const lagCheck = addCheck(check(`${title}: CDN purge lag, swap → acknowledged (p99 ms)`, lagP99, '<=', LAG_TARGET_MS))
      const oneCheck = addCheck(check(`${title}: CDN purges per edit`, perEdit, '==', 1))
      const everyCheck = addCheck(check(`${title}: edits whose purge reached the page's detail`, edits - done.filter((each) => each.missing.length > 0).length, '>=', edits))
      rows.push({
        scenario: `${title}: CMS edit until the CDN purge is acknowledged (CDN_PURGE_VARNISH, purge gate waiting for both followers)`,
        shield: `swap → acknowledged ${fmtMs(lagP50)} p50, ${fmtMs(lagP99)} p99 (the syncing instance's log, ${lag.length} purges); PURGE at the syncing instance → purge received ${fmtMs(e2eP50)} p50, ${fmtMs(e2eP99)} p99 over ${edits} edits${unseen > 0 ? `, ${unseen} never within 30 s` : ''}`,
        fastify: '—', node: '—', vsFastify: '—', vsNode: '—',
        target: `≤ ${fmtMs(LAG_TARGET_MS, 0)} p99`,
        met: verdict(lagCheck),
      })
      rows.push({
        scenario: `${title}: CDN purges per edit / keys per purge`,
        shield: `${perEdit.toFixed(2)} (${purgesTotal} for ${edits} edits, none from the followers expected) / ${percentileOfSorted(keys, 50)} median, ${keys.at(-1)} max; ${missingKeys} edited details not purged; the purge gate's waits: ${gate}`,
        fastify: '—', node: '—', vsFastify: '—', vsNode: '—',
        target: '1 / the page\'s detail purged',
        met: `${verdict(oneCheck)} / ${verdict(everyCheck)}`,
      })
      const existing = (results.purge ?? {}) as Record<string, unknown>
      results.purge = {
        ...existing,
        [String(site.pages)]: { pages: site.pages, edits, lagMs: lag, endToEndMs: endToEnd, unseen, keysPerPurge: keys, purges: purgesTotal, purgesPerEdit: perEdit, missingKeys, gate: gateAfter, gateBefore },
      }
      // Precision needs a tree large enough to move a subtree of a thousand pages.
      if (pages === ctx.config.largePages) await purgePrecision(ctx, cluster, varnish, title)
    } finally {
      await cluster.stop()
    }
  } finally {
    await varnish.stop()
  }
}
