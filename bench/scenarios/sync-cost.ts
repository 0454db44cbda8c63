/**
 * `sync-cost`: what the sync's safety net costs a CMS that charges (the fake's cost model,
 * test/fake-wagtail/cost-model.ts, at the rates measured against Wagtail), at 10,000 and 100,000
 * pages, before and after SYNC_BUDGET, in CMS busy time per hour; and how soon a PURGEd edit is
 * served while the net runs. See bench/README.md, scenario `sync-cost`.
 *
 * Before (SYNC_BUDGET=0, SYNC_DERIVE_URLS=false: the listing with `html_url`): the first, full
 * sync's busy time and a listing walk's (a `PURGE /nowhere/`, the same requests) are read from the
 * CMS's counter; the schedule is the settings' own, a walk every SYNC_INTERVAL and a full sync in
 * place of one every FULL_SYNC_INTERVAL.
 *
 * After (the defaults): the CMS holds each worker for its cost × SCALE of real time, so the
 * shield's measured response times, and with them its pacing, run SCALE × faster than real time;
 * SYNC_INTERVAL is scaled alike. A walk's busy time is read from the counter and the walk period
 * the shield chose from `/readyz` (`nextWalkAt − lastWalkEndedAt`); then the CMS holds workers at
 * real speed and the verification's rate is read from the counter over `VERIFY_WINDOW_MS`. FULL_SYNC_INTERVAL is set to its minimum so that every page is due at
 * once: at these sizes a verification cycle at its share of the budget is longer than an hour, and
 * the verification runs all the time.
 * @module
 */
import type { BenchContext } from '../lib/context.js'
import { call, getJson, postJson, sleep, waitFor } from '../lib/http.js'
import type { Origin, SiteInfo } from '../lib/origin-control.js'
import { check, fmtInt, verdict } from '../lib/report.js'
import { startCluster } from '../lib/cluster.js'
import { afterOneSync, shieldIdle, type Shield } from '../lib/shield.js'

/** Sizes measured, in the order they run. */
export const SYNC_COST_SIZES = [10_000, 100_000] as const
/** Real time a CMS worker is held per ms of its cost in the "after" runs. */
const SCALE = 0.1
/** The defaults the "before" schedule is composed from, SYNC_INTERVAL and FULL_SYNC_INTERVAL. */
const INTERVAL_S = 60
const FULL_INTERVAL_S = 3_600
/**
 * How long the "after" run measures the verification at real speed, once the first walk has ended:
 * at the default budget a step of four details comes every half minute or so.
 */
const VERIFY_WINDOW_MS = 120_000
/** The longest wait for the walk the run measures, the first one after the cluster's first sync. */
const FIRST_WALK_WAIT_MS = 600_000
/** The goal: the net within 5% of one CMS worker at 100,000 pages; a PURGEd edit served within a second. */
const NET_SHARE_GOAL = 0.05
const PURGE_GOAL_MS = 1_000

interface Busy {
  totalMs: number
  listingMs: number
  detailMs: number
  otherMs: number
  requests: number
}

interface NetBody {
  sync?: { net?: { lastWalkEndedAt: string | null; nextWalkAt: string | null; budgetUsed: number } | null; running?: boolean }
}

const busy = (origin: Origin): Promise<Busy> => getJson<Busy>(`${origin.control}/cost`)
const resetBusy = (origin: Origin): Promise<unknown> => postJson(`${origin.control}/cost/reset`, {})
const charge = (origin: Origin, scale: number): Promise<unknown> => postJson(`${origin.control}/cost`, { scale })
const chargeOff = (origin: Origin): Promise<unknown> => postJson(`${origin.control}/cost`, { off: true })

const cmsSeconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`
const perHour = (ms: number): string => `${fmtInt(Math.round(ms / 1000))} s/h (${((ms / 3_600_000) * 100).toFixed(2)}% of one worker)`

export async function syncCostScenario(ctx: BenchContext): Promise<void> {
  const { origin } = ctx
  const { log } = ctx.recorder
  const results: Record<string, unknown> = {}
  try {
    for (const pages of SYNC_COST_SIZES) {
      if (ctx.schedule.spareMs('sync-cost') < pages * 2) {
        ctx.recorder.skip(`sync-cost ${fmtInt(pages)} pages`, 'not enough time left before BENCH_MAX_SECONDS')
        continue
      }
      const site = await postJson<SiteInfo>(`${origin.control}/site`, { pages }, 180_000)
      log(`sync-cost: ${fmtInt(site.pages)} pages, before`)
      const before = await measureBefore(ctx)
      log(`sync-cost: ${fmtInt(site.pages)} pages, after`)
      const after = await measureAfter(ctx, site)
      results[String(pages)] = { before, after }
      report(ctx, site.pages, before, after)
    }
  } finally {
    await chargeOff(origin).catch(() => undefined)
  }
  ctx.recorder.results.syncCost = results
}

interface Before {
  fullMs: number
  walkMs: number
  hourMs: number
}

async function measureBefore(ctx: BenchContext): Promise<Before> {
  const { origin } = ctx
  await charge(origin, 0)
  await resetBusy(origin)
  const shield = await ctx.startShield('cms-shield-sync-cost-before', 'warn', 240_000, { SYNC_BUDGET: '0', SYNC_DERIVE_URLS: 'false' })
  try {
    const full = await busy(origin)
    await shieldIdle(shield, 60_000)
    await resetBusy(origin)
    await afterOneSync(shield, 120_000, async () => {
      // Just after a large first sync the shield may still be busy with it: a long answer time.
      const response = await call(`${shield.origin}/nowhere/`, { method: 'PURGE', timeoutMs: 60_000 })
      if (response.status !== 200) throw new Error(`PURGE /nowhere/: ${response.status}`)
    })
    const walk = await busy(origin)
    const walksPerHour = FULL_INTERVAL_S / INTERVAL_S - 1
    return { fullMs: full.totalMs, walkMs: walk.totalMs, hourMs: walksPerHour * walk.totalMs + full.totalMs }
  } finally {
    await shield.child.stop()
  }
}

interface After {
  walkMs: number
  walkPeriodS: number
  verifyShare: number
  hourMs: number
  budgetUsed: number
  purgeMs: number
}

async function measureAfter(ctx: BenchContext, site: SiteInfo): Promise<After> {
  const { origin } = ctx
  // Charged from the start, compressed: a walk the CMS did not charge for would still cost its
  // loopback round trips, which at the default budget take longer to pay off than a run may last.
  await charge(origin, SCALE)
  // Three instances and Redis (`lib/cluster.ts`): the first syncs and runs the net, the others follow.
  // SYNC_INTERVAL (the harness's own is 24 h) at its default: the first walk then starts once the
  // followers are up and the counter is reset, and at these sizes each walk's pay-off, not the
  // interval, sets the period.
  const cluster = await startCluster(ctx, `sync-cost-${site.pages}`, { SYNC_INTERVAL: `${INTERVAL_S}s`, FULL_SYNC_INTERVAL: '1s' })
  const shield = cluster.leader
  try {
    // The first sync is the net's starting point, not part of it: counted from here on.
    await resetBusy(origin)
    const before = (await getJson<NetBody>(`${shield.origin}/readyz`)).sync?.net?.lastWalkEndedAt ?? null
    const walked = await waitFor('the first charged walk to end', FIRST_WALK_WAIT_MS, 250, async () => {
      const net = (await getJson<NetBody>(`${shield.origin}/readyz`)).sync?.net
      return net?.lastWalkEndedAt && net.lastWalkEndedAt !== before && net.nextWalkAt ? net : undefined
    })
    const walk = await busy(origin)
    // The verification at real speed: compressed, each request's own overhead would weigh as much
    // as a scaled detail, and the shield would count each detail twice what the model charges.
    await charge(origin, 1)
    const verifyFrom = Date.now()
    await sleep(VERIFY_WINDOW_MS)
    const end = await busy(origin)
    const net = (await getJson<NetBody>(`${shield.origin}/readyz`)).sync?.net
    const walkPeriodS = (Date.parse(walked.nextWalkAt!) - Date.parse(walked.lastWalkEndedAt!)) / SCALE / 1000
    const verifyShare = end.detailMs / (Date.now() - verifyFrom)
    const hourMs = (3_600 / walkPeriodS) * walk.listingMs + verifyShare * 3_600_000
    const purgeMs = await purgeLatency(cluster.shields, origin, site)
    return { walkMs: walk.listingMs, walkPeriodS, verifyShare, hourMs, budgetUsed: net?.budgetUsed ?? Number.NaN, purgeMs }
  } finally {
    await cluster.stop()
  }
}

/** An edit, its PURGE at the syncing instance, and the time until every instance serves the new title. */
async function purgeLatency(shields: readonly Shield[], origin: Origin, site: SiteInfo): Promise<number> {
  const id = site.sampleIds[Math.floor(site.sampleIds.length / 3)]!
  const edit = await postJson<{ title: string; path: string }>(`${origin.control}/edit`, { id })
  const started = performance.now()
  const purged = await call(`${shields[0]!.origin}${edit.path}`, { method: 'PURGE', timeoutMs: 30_000 })
  if (purged.status !== 200) throw new Error(`PURGE ${edit.path}: ${purged.status}`)
  await waitFor('the PURGEd edit served by every instance', 30_000, 5, async () => {
    for (const shield of shields) {
      const answer = await call(`${shield.origin}${edit.path}`)
      if ((JSON.parse(answer.body.toString('utf8')) as { title?: string }).title !== edit.title) return undefined
    }
    return true
  })
  return performance.now() - started
}

function report(ctx: BenchContext, pages: number, before: Before, after: After): void {
  const { rows, addCheck } = ctx.recorder
  const row = (scenario: string, shield: string, target: string, met: string) => {
    rows.push({ scenario, shield, fastify: '—', node: '—', vsFastify: '—', vsNode: '—', target, met })
  }
  row(
    `sync-cost ${fmtInt(pages)} pages, before (SYNC_BUDGET=0, listing with html_url)`,
    `${perHour(before.hourMs)} = ${INTERVAL_S - 1} walks × ${cmsSeconds(before.walkMs)} + 1 full sync × ${cmsSeconds(before.fullMs)} (CMS busy time read from its counter; a walk every SYNC_INTERVAL, a full sync every FULL_SYNC_INTERVAL in place of one)`,
    '—',
    '—',
  )
  const share = after.hourMs / 3_600_000
  const shareCheck = pages >= 100_000 ? addCheck(check(`sync-cost ${pages}: net share of one CMS worker`, share, '<=', NET_SHARE_GOAL)) : undefined
  row(
    `sync-cost ${fmtInt(pages)} pages, after (defaults: SYNC_BUDGET=0.5%)`,
    `${perHour(after.hourMs)} = ${(3_600 / after.walkPeriodS).toFixed(2)} walks/h (period ${fmtInt(Math.round(after.walkPeriodS))} s, as the shield scheduled it) × ${cmsSeconds(after.walkMs)} + verification at ${(after.verifyShare * 100).toFixed(2)}% of a worker (counter over ${VERIFY_WINDOW_MS / 1000} s at real speed); /readyz budgetUsed ${after.budgetUsed}`,
    pages >= 100_000 ? `≤ ${NET_SHARE_GOAL * 100}% of one worker` : '—',
    shareCheck ? verdict(shareCheck) : '—',
  )
  const purgeCheck = addCheck(check(`sync-cost ${pages}: PURGEd edit served (ms)`, after.purgeMs, '<=', PURGE_GOAL_MS))
  row(`sync-cost ${fmtInt(pages)} pages: a PURGEd edit served by every instance while the net runs`, `${after.purgeMs.toFixed(0)} ms from PURGE at the syncing instance to the new title served by all three`, `≤ ${PURGE_GOAL_MS} ms`, verdict(purgeCheck))
}
