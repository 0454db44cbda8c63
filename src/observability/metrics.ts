/**
 * Prometheus metrics for cms-shield, fed by events (`shield-events.ts`, each cache tier's
 * `store-events.ts`) and by sources read at scrape time (the snapshot, the tiers' sizes, Redis,
 * the sync role). Nothing in the core calls into this module: it subscribes, counts, and renders.
 *
 * Each `createMetrics()` owns its own prom-client `Registry` (never the global one), so several
 * apps in one process — the test suites run many — never share or collide on a metric.
 *
 * Label values are bounded by construction: routes, cache outcomes, kinds, modes and reasons are
 * closed sets, methods and statuses are folded into known values, and no URL, page id, cache key
 * or query ever becomes a label.
 *
 * Gauges that describe the present (snapshot, cache sizes, Redis, role) are read from their
 * sources when scraped, not kept up to date by events, so they cannot drift from what is served;
 * a source that has nothing to say (no snapshot loaded yet) leaves its series absent, not 0.
 *
 * Redis errors are not a separate metric: `cms_shield_cache_errors_total{tier="redis"}` counts
 * every failed, timed-out or undecodable command of the Redis cache tier.
 * @module
 */
import {
  collectDefaultMetrics,
  Counter,
  Gauge,
  Histogram,
  Registry,
  type GaugeConfiguration,
} from 'prom-client'
import { errorCatalogue } from '../errors.js'
import type { StoreEvents } from './store-events.js'
import { createRequestTally } from './request-tally.js'
import type { CacheOutcome, RouteName, ShieldEvents, TrafficClass, UpstreamKind } from './shield-events.js'
import { plainRequestMetrics, TalliedCounter, TalliedHistogram, TALLIED_METRICS_SUPPORTED } from './tallied-metrics.js'

export const METRIC_PREFIX = 'cms_shield_'

export type TierName = 'memory' | 'redis'

/** What the read-through budget reports at each scrape. */
/** What the snapshot gauges read of the snapshot served: the tree's snapshot has these and more. */
export interface ServedSnapshot {
  readonly version: number
  readonly pages: { readonly length: number }
  readonly syncedAt: number
}

export interface BudgetState {
  readonly scope: 'cluster' | 'local'
  readonly tokens: number
  readonly concurrencyLimit: number
  readonly inFlight: number
  readonly queued: number
}
export type Role = 'leader' | 'follower' | 'standalone'

/** What the sync's safety net reports at each scrape (`sync/safety-net.ts`). */
export interface NetProgress {
  readonly budget: number
  readonly lastWalkEndedAt: number | undefined
  readonly oldestVerifiedAt: number | undefined
  readonly walkCmsMs: number
  readonly verifyCmsMs: number
  /** When the net started on this instance (ms since the epoch). */
  readonly since: number
}

export interface MetricsTier {
  readonly name: TierName
  readonly events: StoreEvents
  /** Entries the tier holds now (the memory store's `entries`). */
  readonly entries?: () => number
  /** Bytes the tier holds now (the memory store's `bytes`). */
  readonly bytes?: () => number
}

export interface MetricsSources {
  readonly events: ShieldEvents
  readonly tiers: ReadonlyArray<MetricsTier>
  readonly snapshot: () => ServedSnapshot | undefined
  /** The other Sites' trees (SITES), by hostname: their snapshot series carry a `site` label. */
  readonly siteSnapshots?: () => ReadonlyArray<readonly [string, ServedSnapshot | undefined]>
  /** Only with Redis configured; without it `redis_up` is not exposed. */
  readonly redis?: { up(): boolean }
  /** Only with Redis configured; without it `role` and `leader` are not exposed. */
  readonly role?: () => Role
  /** Milliseconds since the epoch (the app's injected clock). */
  readonly now: () => number
  /** The read-through budget's state now (docs/operations.md, "The CMS budget"). */
  readonly budget?: () => BudgetState
  /** The sync's safety net under SYNC_BUDGET; `undefined` without one, or while this instance does not sync. */
  readonly net?: () => NetProgress | undefined
  /** The CDN purge targets configured, whose purge series start at 0 (docs/cdn-purging.md). */
  readonly cdnTargets?: ReadonlyArray<(typeof CDN_TARGETS)[number]>
  /**
   * Whether the request metrics may be read from a tally at scrape time (`tallied-metrics.ts`);
   * false moves prom-client's own metrics per request. Default: whether its self-check passed.
   */
  readonly talliedMetrics?: boolean
  /** Which path each non-public hook takes (`compose/private-apis.ts`), for `private_api`. */
  readonly privateApis?: Readonly<Record<string, 'private' | 'public'>>
}

export interface Metrics {
  readonly registry: Registry
  /** The `Content-Type` of `render()`'s text. */
  readonly contentType: string
  /** The Prometheus text exposition of every metric, sources read now. */
  render(): Promise<string>
  /** Unsubscribes from every hub; the counters keep their values but stop moving. */
  close(): void
}

/** Answers from the snapshot or from memory take well under a millisecond; a CMS round trip up to the timeout. */
export const HTTP_DURATION_BUCKETS: readonly number[] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]
export const CMS_DURATION_BUCKETS: readonly number[] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]
/** From a swap to the CDN's acknowledgement: well under a second when every instance keeps up, up to CDN_PURGE_WAIT and retries when not. */
export const CDN_PURGE_LAG_BUCKETS: readonly number[] = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300]
/** Keys per purge request: one edit names a handful, a move dozens, a batch up to the targets' limits. */
export const CDN_PURGE_KEY_BUCKETS: readonly number[] = [1, 2, 5, 10, 25, 50, 100, 256]
export const SYNC_DURATION_BUCKETS: readonly number[] = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600]

/** Route labels; the last one also stands for any route not listed. */
const ROUTES: readonly RouteName[] = ['list', 'detail', 'find', 'purge', 'refresh', 'healthz', 'readyz', 'metrics', 'other']
/** Cache outcome labels; the last one also stands for any outcome not listed. */
const CACHE_OUTCOMES: readonly CacheOutcome[] = ['snapshot', 'hit', 'miss', 'coalesced', 'stale', 'stale-error', 'stale-budget', 'none']
const UPSTREAM_KINDS: ReadonlySet<UpstreamKind> = new Set<UpstreamKind>(['list', 'detail', 'find', 'other'])
/** Methods worth a series of their own; anything else a client invents is `other`. */
const METHODS: readonly string[] = ['GET', 'HEAD', 'OPTIONS', 'POST', 'PUT', 'PATCH', 'DELETE', 'PURGE']
const ROLES: readonly Role[] = ['leader', 'follower', 'standalone']
const SYNC_MODES = ['full', 'incremental'] as const
const SYNC_RESULTS = ['changed', 'unchanged', 'failed'] as const
const SNAPSHOT_SOURCES = ['sync', 'storage', 'peer'] as const

/** Bounded label values: every catalogue code a sync can fail with, and `SYNC_FAILED` for the rest. */
const SYNC_FAILURE_CODES: ReadonlySet<string> = new Set([...Object.keys(errorCatalogue), 'SYNC_FAILED'])

const STALE_REASONS = { stale: 'revalidating', 'stale-error': 'cms-error', 'stale-budget': 'over-budget' } as const
const TRAFFIC_CLASSES: readonly TrafficClass[] = ['sync', 'refresh', 'read_through']
const BUDGET_REFUSALS = ['client_share', 'cms_budget', 'queue_full', 'queue_timeout'] as const
const MISS_REASONS = ['absent', 'expired', 'error'] as const
const EVICT_REASONS = ['size', 'expired'] as const
const STORE_OPERATIONS = ['get', 'set', 'delete'] as const
const PURGE_RESULTS = ['accepted', 'refused'] as const
const PURGE_TARGETS = ['page', 'listing', 'endpoint', 'unknown'] as const
const WEBHOOK_RESULTS = ['accepted', 'unauthorized', 'bad-request'] as const
const CDN_TARGETS = ['varnish', 'fastly', 'cloudflare'] as const
const CDN_OUTCOMES = ['ok', 'retried', 'failed'] as const
const PURGE_GATE_RESULTS = ['confirmed', 'timeout', 'unavailable', 'standalone'] as const

type Labels<T extends string> = Partial<Record<T, string>>
type Sample<T extends string> = readonly [labels: Labels<T>, value: number]

/**
 * A gauge whose samples are read from a source each time it is scraped (prom-client calls `get()`
 * once per scrape). Unlike a `collect()` that sets values, it can expose no sample at all — an
 * unlabelled prom-client gauge otherwise always shows 0 — and never keeps a label set the source
 * no longer reports. A source that throws leaves its series absent from that scrape (and is reported
 * as a process warning), so one broken source never costs the other metrics.
 */
class ScrapedGauge<T extends string> extends Gauge<T> {
  readonly #read: () => Iterable<Sample<T>>

  constructor(configuration: GaugeConfiguration<T>, read: () => Iterable<Sample<T>>) {
    super(configuration)
    this.#read = read
  }

  override async get(): Promise<Awaited<ReturnType<Gauge<T>['get']>>> {
    const metric = await super.get()
    const values = []
    try {
      for (const [labels, value] of this.#read()) values.push({ labels, value })
    } catch (error) {
      // One source that throws must not fail the whole scrape: its series are absent this time.
      process.emitWarning(`metric ${metric.name} could not be read: ${String(error)}`, 'MetricsSourceWarning')
      values.length = 0
    }
    return { ...metric, values }
  }
}

export function createMetrics(sources: MetricsSources): Metrics {
  const names = new Set<TierName>()
  for (const tier of sources.tiers) {
    if (names.has(tier.name)) throw new TypeError(`expected one cache tier per name, got '${tier.name}' twice`)
    names.add(tier.name)
  }

  const registry = new Registry()
  const registers = [registry]
  const name = (suffix: string) => METRIC_PREFIX + suffix
  collectDefaultMetrics({ register: registry, prefix: METRIC_PREFIX })

  // HTTP
  const requestTally = createRequestTally({ routes: ROUTES, caches: CACHE_OUTCOMES, methods: METHODS, bounds: HTTP_DURATION_BUCKETS })
  const requestMetrics = {
    counter: {
      name: name('http_requests_total'),
      help: 'HTTP requests answered, by route, method, status code and where the answer came from (cache).',
      registers,
    },
    histogram: {
      name: name('http_request_duration_seconds'),
      help: 'Time from receiving an HTTP request to sending its response, by route and cache outcome.',
      registers,
    },
  }
  let recordRequest: (route: string, method: string, status: number, cache: string, seconds: number) => void
  if (sources.talliedMetrics ?? TALLIED_METRICS_SUPPORTED) {
    new TalliedCounter(requestMetrics.counter, requestTally)
    new TalliedHistogram(requestMetrics.histogram, requestTally)
    recordRequest = (route, method, status, cache, seconds) => void requestTally.record(route, method, status, cache, seconds)
  } else {
    recordRequest = plainRequestMetrics(requestMetrics, requestTally)
  }
  if (sources.privateApis) {
    const privateApi = new Gauge({
      name: name('private_api'),
      help: 'Which path each non-public Node or prom-client hook takes (1): private where its self-check passed, public where it failed or PRIVATE_APIS=false.',
      labelNames: ['api', 'path'] as const,
      registers,
    })
    for (const [api, path] of Object.entries(sources.privateApis)) privateApi.set({ api, path }, 1)
  }
  const staleResponses = new Counter({
    name: name('stale_responses_total'),
    help: 'Read-through answers served past their freshness: revalidating (a refresh runs) or cms-error (the CMS failed).',
    labelNames: ['reason'] as const,
    registers,
  })

  // CMS
  const cmsRequests = new Counter({
    name: name('cms_requests_total'),
    help: 'Requests made to the CMS (each retry counts), by class (sync, refresh, read_through), kind and status code, or error / timeout.',
    labelNames: ['class', 'kind', 'status'] as const,
    registers,
  })
  const cmsDuration = new Histogram({
    name: name('cms_request_duration_seconds'),
    help: 'Duration of each request to the CMS, headers and whole body, by kind.',
    labelNames: ['kind'] as const,
    buckets: [...CMS_DURATION_BUCKETS],
    registers,
  })

  const budgetRefusals = new Counter({
    name: name('read_through_rejections_total'),
    help: 'Read-through misses the budget refused, by reason: client_share (429), cms_budget, queue_full, queue_timeout (503); a stored answer may have been served instead.',
    labelNames: ['reason'] as const,
    registers,
  })
  const budgetFallbacks = new Counter({
    name: name('read_through_budget_fallbacks_total'),
    help: 'Times the CMS budget fell back from the cluster\'s (Redis) to this instance\'s own, because Redis could not be reached.',
    registers,
  })
  const { budget } = sources
  if (budget) {
    const budgetGauge = (suffix: string, help: string, read: (state: BudgetState) => number) =>
      new ScrapedGauge({ name: name(suffix), help, registers }, () => [[{}, read(budget())]])
    budgetGauge('read_through_concurrency_limit', 'Read-through requests allowed in flight now (follows the CMS\'s latency when adaptive).', (s) => s.concurrencyLimit)
    budgetGauge('read_through_in_flight', 'Read-through requests in flight to the CMS now.', (s) => s.inFlight)
    budgetGauge('read_through_queued', 'Read-through misses waiting for a place in flight now.', (s) => s.queued)
    budgetGauge('read_through_budget_tokens', 'Tokens left in the CMS budget at its last use (the cluster\'s with Redis).', (s) => s.tokens)
    budgetGauge('read_through_budget_shared', 'Whether the CMS budget is the cluster\'s in Redis (1) or this instance\'s own (0).', (s) => (s.scope === 'cluster' ? 1 : 0))
  }

  // Sync
  const syncRuns = new Counter({
    name: name('sync_runs_total'),
    help: 'Syncs of the page tree run by this instance, by mode and result (changed, unchanged, failed).',
    labelNames: ['mode', 'result'] as const,
    registers,
  })
  const syncFailures = new Counter({
    name: name('sync_failures_total'),
    help: 'Failed syncs by error code (UPSTREAM_UNAVAILABLE, UPSTREAM_BAD_RESPONSE, SYNC_INCONSISTENT, …): why the last good snapshot kept serving.',
    labelNames: ['code'] as const,
    registers,
  })
  const syncDuration = new Histogram({
    name: name('sync_duration_seconds'),
    help: 'Duration of each sync, whatever its result, by mode.',
    labelNames: ['mode'] as const,
    buckets: [...SYNC_DURATION_BUCKETS],
    registers,
  })
  const syncDetails = new Counter({
    name: name('sync_details_fetched_total'),
    help: 'Page details fetched from the CMS by syncs, by mode.',
    labelNames: ['mode'] as const,
    registers,
  })
  const syncPagesChanged = new Counter({
    name: name('sync_pages_changed_total'),
    help: 'Pages added, removed or changed by the snapshots this instance synced.',
    registers,
  })
  let lastSyncSuccessAt: number | undefined
  new ScrapedGauge(
    {
      name: name('sync_last_success_timestamp_seconds'),
      help: 'When this instance last finished a sync that succeeded (changed or not), in seconds since the epoch; absent before the first.',
      registers,
    },
    () => (lastSyncSuccessAt === undefined ? [] : [[{}, lastSyncSuccessAt / 1000]]),
  )

  registerNetGauges(name, registers, sources)

  // Snapshot
  const snapshotSwaps = new Counter({
    name: name('snapshot_swaps_total'),
    help: 'Snapshots swapped in, by source: sync (synced here), storage (warm start) or peer (the syncing instance).',
    labelNames: ['source'] as const,
    registers,
  })
  // The default Site's series have no `site` label (to Prometheus, the same as an empty one); each
  // other Site's tree has its own series, labelled with its hostname.
  const snapshotGauge = (suffix: string, help: string, read: (snapshot: ServedSnapshot) => number) =>
    new ScrapedGauge({ name: name(suffix), help, labelNames: ['site'] as const, registers }, () => {
      const samples: Array<Sample<'site'>> = []
      const snapshot = sources.snapshot()
      if (snapshot !== undefined) samples.push([{}, read(snapshot)])
      for (const [site, other] of sources.siteSnapshots?.() ?? []) if (other !== undefined) samples.push([{ site }, read(other)])
      return samples
    })
  snapshotGauge('snapshot_version', 'Version of the snapshot served (one more per swap); absent before the first.', (s) => s.version)
  snapshotGauge('snapshot_pages', 'Pages in the snapshot served; absent before the first.', (s) => s.pages.length)
  snapshotGauge(
    'snapshot_synced_timestamp_seconds',
    'When the sync that built the snapshot served finished, in seconds since the epoch; absent before the first.',
    (s) => s.syncedAt / 1000,
  )
  snapshotGauge(
    'snapshot_age_seconds',
    'Seconds since the sync that built the snapshot served (a sync that changes nothing keeps it, so this grows while the CMS is quiet); absent before the first.',
    (s) => Math.max(0, sources.now() - s.syncedAt) / 1000,
  )

  // Cache tiers
  // A hit is the common case of every read-through read: counted as a plain number per tier and
  // handed to prom-client when scraped, not through its label hashing on every lookup.
  const tierHits = new Map<TierName, number>()
  new Counter({
    name: name('cache_hits_total'),
    help: 'Read-through cache lookups that found a live entry, by tier.',
    labelNames: ['tier'] as const,
    registers,
    collect() {
      this.reset()
      for (const [tier, hits] of tierHits) this.inc({ tier }, hits)
    },
  })
  const cacheMisses = new Counter({
    name: name('cache_misses_total'),
    help: 'Read-through cache lookups that found nothing usable, by tier and reason (absent, expired, error).',
    labelNames: ['tier', 'reason'] as const,
    registers,
  })
  const cacheEvictions = new Counter({
    name: name('cache_evictions_total'),
    help: 'Entries dropped by a cache tier, by reason: size (least recently used, over the byte bound) or expired.',
    labelNames: ['tier', 'reason'] as const,
    registers,
  })
  const cacheErrors = new Counter({
    name: name('cache_errors_total'),
    help: 'Cache tier commands that failed, timed out or read bytes that are not an entry (answered as a miss / no-op), by tier, operation and timed_out.',
    labelNames: ['tier', 'operation', 'timed_out'] as const,
    registers,
  })
  new ScrapedGauge(
    {
      name: name('cache_entries'),
      help: 'Entries a cache tier holds, expired ones not yet dropped included (tiers that can tell).',
      labelNames: ['tier'] as const,
      registers,
    },
    () => tierSamples((tier) => tier.entries),
  )
  new ScrapedGauge(
    {
      name: name('cache_bytes'),
      help: 'Bytes a cache tier holds, counted against its bound (tiers that can tell).',
      labelNames: ['tier'] as const,
      registers,
    },
    () => tierSamples((tier) => tier.bytes),
  )
  function tierSamples(pick: (tier: MetricsTier) => (() => number) | undefined): Sample<'tier'>[] {
    const samples: Sample<'tier'>[] = []
    for (const tier of sources.tiers) {
      const read = pick(tier)
      if (read) samples.push([{ tier: tier.name }, read()])
    }
    return samples
  }

  // Redis and the cluster
  const { redis, role } = sources
  if (redis) {
    new ScrapedGauge(
      { name: name('redis_up'), help: 'Whether Redis can be reached now (1) or not (0).', registers },
      () => [[{}, redis.up() ? 1 : 0]],
    )
  }
  const roleChanges = new Counter({
    name: name('role_changes_total'),
    help: "Times this instance's part in syncing changed, by the role it took (with Redis only).",
    labelNames: ['role'] as const,
    registers,
  })
  if (role) {
    new ScrapedGauge(
      {
        name: name('role'),
        help: "This instance's part in syncing: 1 for its current role (leader, follower, standalone), 0 for the others.",
        labelNames: ['role'] as const,
        registers,
      },
      () => {
        const current = role()
        return ROLES.map((each): Sample<'role'> => [{ role: each }, each === current ? 1 : 0])
      },
    )
    new ScrapedGauge(
      { name: name('leader'), help: 'Whether this instance holds the sync lease (1) or not (0).', registers },
      () => [[{}, role() === 'leader' ? 1 : 0]],
    )
  }

  // Refresh calls
  const purgeRequests = new Counter({
    name: name('purge_requests_total'),
    help: 'PURGE requests, by result (accepted, refused) and target (page, listing, unknown).',
    labelNames: ['result', 'target'] as const,
    registers,
  })
  const webhookRequests = new Counter({
    name: name('webhook_requests_total'),
    help: 'Calls of the refresh webhook, by result (accepted, unauthorized, bad-request).',
    labelNames: ['result'] as const,
    registers,
  })

  // CDN purges (docs/cdn-purging.md)
  const cdnPurges = new Counter({
    name: name('cdn_purges_total'),
    help: 'Purge requests to a CDN, by target (varnish, fastly, cloudflare) and outcome: ok (acknowledged), retried (will be sent again), failed (refused or given up).',
    labelNames: ['target', 'outcome'] as const,
    registers,
  })
  const cdnPurgeKeys = new Histogram({
    name: name('cdn_purge_keys'),
    help: 'Surrogate keys in each acknowledged CDN purge request, by target.',
    labelNames: ['target'] as const,
    buckets: [...CDN_PURGE_KEY_BUCKETS],
    registers,
  })
  const cdnPurgeLag = new Histogram({
    name: name('cdn_purge_lag_seconds'),
    help: 'Time from the swap of a snapshot to the CDN acknowledging the purge of its keys, by target.',
    labelNames: ['target'] as const,
    buckets: [...CDN_PURGE_LAG_BUCKETS],
    registers,
  })
  const cdnPurgeGate = new Counter({
    name: name('cdn_purge_gate_total'),
    help: 'With Redis: CDN purges by how the wait for every instance to serve the change ended: confirmed, timeout (CDN_PURGE_WAIT ran out; sent anyway), unavailable (Redis could not say), standalone (not waited for).',
    labelNames: ['result'] as const,
    registers,
  })

  // Every series of a closed label set starts at 0, so rate() and increase() see its first event.
  for (const mode of SYNC_MODES) {
    for (const result of SYNC_RESULTS) syncRuns.inc({ mode, result }, 0)
    syncDetails.inc({ mode }, 0)
  }
  syncPagesChanged.inc(0)
  for (const source of SNAPSHOT_SOURCES) snapshotSwaps.inc({ source }, 0)
  for (const reason of Object.values(STALE_REASONS)) staleResponses.inc({ reason }, 0)
  for (const reason of BUDGET_REFUSALS) budgetRefusals.inc({ reason }, 0)
  budgetFallbacks.inc(0)
  for (const result of PURGE_RESULTS) for (const target of PURGE_TARGETS) purgeRequests.inc({ result, target }, 0)
  for (const result of WEBHOOK_RESULTS) webhookRequests.inc({ result }, 0)
  for (const target of new Set(sources.cdnTargets ?? [])) for (const outcome of CDN_OUTCOMES) cdnPurges.inc({ target, outcome }, 0)
  if ((sources.cdnTargets ?? []).length > 0) for (const result of PURGE_GATE_RESULTS) cdnPurgeGate.inc({ result }, 0)
  if (role) for (const each of ROLES) roleChanges.inc({ role: each }, 0)

  const unsubscribers: Array<() => void> = []
  const { events } = sources

  unsubscribers.push(
    // The hottest event: counted with plain numbers, read by prom-client only when scraped.
    events.on('request', ({ route, method, status, cache, durationMs }) => {
      recordRequest(route, method, status, cache, durationMs / 1000)
      if (cache === 'stale' || cache === 'stale-error' || cache === 'stale-budget') staleResponses.inc({ reason: STALE_REASONS[cache] })
    }),
    events.on('budget', ({ reason }) => budgetRefusals.inc({ reason })),
    events.on('budgetScope', ({ scope }) => {
      if (scope === 'local') budgetFallbacks.inc()
    }),
    events.on('upstream', ({ kind, trafficClass, status, durationMs }) => {
      const kindLabel = oneOf(kind, UPSTREAM_KINDS, 'other')
      const classLabel = TRAFFIC_CLASSES.includes(trafficClass) ? trafficClass : 'read_through'
      cmsRequests.inc({ class: classLabel, kind: kindLabel, status: status === 'timeout' ? 'timeout' : statusLabel(status, 'error') })
      observe(cmsDuration, { kind: kindLabel }, durationMs)
    }),
    events.on('sync', ({ mode, result, durationMs, detailsFetched, code }) => {
      syncRuns.inc({ mode, result })
      if (result === 'failed') syncFailures.inc({ code: oneOf(code ?? 'SYNC_FAILED', SYNC_FAILURE_CODES, 'SYNC_FAILED') })
      observe(syncDuration, { mode }, durationMs)
      if (isCount(detailsFetched)) syncDetails.inc({ mode }, detailsFetched)
      if (result !== 'failed') lastSyncSuccessAt = sources.now()
    }),
    events.on('snapshot', ({ source, changedPages }) => {
      snapshotSwaps.inc({ source })
      if (source === 'sync' && isCount(changedPages)) syncPagesChanged.inc(changedPages)
    }),
    events.on('role', ({ role: taken }) => roleChanges.inc({ role: taken })),
    events.on('purge', ({ result, target }) => purgeRequests.inc({ result, target })),
    events.on('webhook', ({ result }) => webhookRequests.inc({ result })),
    events.on('cdnPurge', ({ target, outcome, keys, lagMs }) => {
      if (!CDN_TARGETS.includes(target) || !CDN_OUTCOMES.includes(outcome)) return
      cdnPurges.inc({ target, outcome })
      if (outcome !== 'ok') return
      if (isCount(keys)) cdnPurgeKeys.observe({ target }, keys)
      observe(cdnPurgeLag, { target }, lagMs)
    }),
    events.on('purgeGate', ({ result }) => {
      if (PURGE_GATE_RESULTS.includes(result)) cdnPurgeGate.inc({ result })
    }),
  )

  for (const tier of sources.tiers) {
    const labels = { tier: tier.name }
    tierHits.set(tier.name, 0)
    for (const reason of MISS_REASONS) cacheMisses.inc({ ...labels, reason }, 0)
    for (const reason of EVICT_REASONS) cacheEvictions.inc({ ...labels, reason }, 0)
    for (const operation of STORE_OPERATIONS) {
      for (const timedOut of ['true', 'false']) cacheErrors.inc({ ...labels, operation, timed_out: timedOut }, 0)
    }
    unsubscribers.push(
      tier.events.on('hit', () => void tierHits.set(tier.name, tierHits.get(tier.name)! + 1)),
      tier.events.on('miss', ({ reason }) => cacheMisses.inc({ ...labels, reason })),
      tier.events.on('evict', ({ reason }) => cacheEvictions.inc({ ...labels, reason })),
      tier.events.on('error', ({ operation, timedOut }) => cacheErrors.inc({ ...labels, operation, timed_out: timedOut ? 'true' : 'false' })),
    )
  }

  return {
    registry,
    contentType: registry.contentType,
    render: () => registry.metrics(),
    close() {
      for (const unsubscribe of unsubscribers.splice(0)) unsubscribe()
    },
  }
}

function oneOf<T extends string>(value: T, allowed: ReadonlySet<T>, fallback: T): T {
  return allowed.has(value) ? value : fallback
}

/** An HTTP status code as a label, or `fallback` for anything that is not one. */
function statusLabel(status: unknown, fallback: string): string {
  return typeof status === 'number' && Number.isInteger(status) && status >= 100 && status <= 599 ? String(status) : fallback
}

function isCount(value: number): boolean {
  return Number.isFinite(value) && value >= 0
}

/** Observes milliseconds as seconds; a duration that is not a number (a clock gone wrong) is not observed. */
function observe<T extends string>(histogram: Histogram<T>, labels: Labels<T>, durationMs: number): void {
  if (Number.isFinite(durationMs)) histogram.observe(labels, Math.max(0, durationMs) / 1000)
}

/**
 * The sync's safety net (docs/operations.md, "The sync's safety net"): the CMS time it spent, by
 * part, what it may spend, when the last listing walk ended and how long ago the least recently
 * verified page was read. Absent without a budget and on an instance that does not sync.
 */
function registerNetGauges(name: (suffix: string) => string, registers: Registry[], sources: MetricsSources): void {
  const net = sources.net
  if (net === undefined) return
  const read = <T>(pick: (progress: NetProgress) => T | undefined, sample: (value: T) => Array<Sample<'part'>>) => () => {
    const progress = net()
    const value = progress === undefined ? undefined : pick(progress)
    return value === undefined ? [] : sample(value)
  }
  new ScrapedGauge(
    { name: name('sync_net_cms_seconds'), help: 'CMS time (response times) the safety net spent since this instance started syncing, by part: walk (listing) or verify (details).', labelNames: ['part'] as const, registers },
    read((p) => p, (p) => [[{ part: 'walk' }, p.walkCmsMs / 1000], [{ part: 'verify' }, p.verifyCmsMs / 1000]]),
  )
  new ScrapedGauge(
    { name: name('sync_net_budget_ratio'), help: 'SYNC_BUDGET: the share of one CMS worker the safety net may use.', labelNames: ['part'] as const, registers },
    read((p) => p.budget, (budget) => [[{}, budget]]),
  )
  new ScrapedGauge(
    { name: name('sync_net_budget_used_ratio'), help: 'CMS time the safety net spent since it started on this instance, as a share of one CMS worker (above SYNC_BUDGET for a while after a start: it spends first, then waits).', labelNames: ['part'] as const, registers },
    read((p) => p, (p) => [[{}, (p.walkCmsMs + p.verifyCmsMs) / Math.max(1, sources.now() - p.since)]]),
  )
  new ScrapedGauge(
    { name: name('sync_net_last_walk_timestamp_seconds'), help: 'When the last listing walk of the safety net ended, in seconds since the epoch; absent before the first.', labelNames: ['part'] as const, registers },
    read((p) => p.lastWalkEndedAt, (at) => [[{}, at / 1000]]),
  )
  new ScrapedGauge(
    { name: name('sync_net_verification_age_seconds'), help: "Seconds since the least recently verified page's detail was read from the CMS; absent with no snapshot.", labelNames: ['part'] as const, registers },
    read((p) => p.oldestVerifiedAt, (at) => [[{}, Math.max(0, sources.now() - at) / 1000]]),
  )
}
