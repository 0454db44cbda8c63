/**
 * The metrics registry, driven by hand-made hubs and fake sources: what each event moves, what
 * gauges read at scrape time, and that the text a scrape gets is valid Prometheus exposition.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { makeSnapshot } from '../../test/helpers/make-snapshot.js'
import { createMemoryStore } from '../cache/stores/memory-store.js'
import { createStoreEvents, type StoreEventHub } from './store-events.js'
import type { Snapshot } from '../tree/snapshot.js'
import { createMetrics, type Metrics, type MetricsSources, type NetProgress, type Role } from './metrics.js'
import { createShieldEvents, type ShieldEvents } from './shield-events.js'

// --- A strict reader of the Prometheus text format (0.0.4) -------------------------------------

interface Sample {
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly value: number
}

interface Family {
  readonly name: string
  help?: string
  type?: string
  readonly samples: Sample[]
}

const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*'
const LABEL_NAME = '[a-zA-Z_][a-zA-Z0-9_]*'
const LABEL_VALUE = '"(?:[^"\\\\\\n]|\\\\[\\\\"n])*"'
const LABEL = `${LABEL_NAME}=${LABEL_VALUE}`
/**
 * prom-client writes NaN as `Nan` (the event loop lag before its first sample); Prometheus reads
 * values with Go's strconv.ParseFloat, which takes NaN and Inf in any case, so this does too.
 */
const VALUE = '(?:[+-]?(?:\\d+\\.?\\d*(?:[eE][+-]?\\d+)?|\\.\\d+(?:[eE][+-]?\\d+)?)|[Nn][Aa][Nn]|[+-][Ii][Nn][Ff])'
const SAMPLE_LINE = new RegExp(`^(${NAME})(?:\\{((?:${LABEL})(?:,${LABEL})*,?)?\\})? (${VALUE})(?: -?\\d+)?$`)
const HELP_LINE = new RegExp(`^# HELP (${NAME}) (.*)$`)
const TYPE_LINE = new RegExp(`^# TYPE (${NAME}) (counter|gauge|histogram|summary|untyped)$`)
const SUFFIXES: Readonly<Record<string, readonly string[]>> = {
  histogram: ['_bucket', '_sum', '_count'],
  summary: ['_sum', '_count'],
}

/** Parses exposition text; throws on any line that is not HELP, TYPE, a sample of a declared family, or blank. */
function parsePrometheusText(text: string): Map<string, Family> {
  const families = new Map<string, Family>()
  const family = (name: string) => {
    let found = families.get(name)
    if (!found) families.set(name, (found = { name, samples: [] }))
    return found
  }
  text.split('\n').forEach((line, index) => {
    const where = `line ${index + 1}: ${JSON.stringify(line)}`
    if (line === '') return
    const help = HELP_LINE.exec(line)
    if (help) {
      const target = family(help[1]!)
      if (target.help !== undefined) throw new Error(`second HELP at ${where}`)
      target.help = help[2]!
      return
    }
    const type = TYPE_LINE.exec(line)
    if (type) {
      const target = family(type[1]!)
      if (target.type !== undefined || target.samples.length > 0) throw new Error(`TYPE repeated or after samples at ${where}`)
      target.type = type[2]!
      return
    }
    if (line.startsWith('#')) throw new Error(`unexpected comment at ${where}`)
    const sample = SAMPLE_LINE.exec(line)
    if (!sample) throw new Error(`not a sample at ${where}`)
    const name = sample[1]!
    const owner = [...families.values()].find(
      (candidate) => candidate.name === name || (SUFFIXES[candidate.type ?? ''] ?? []).some((suffix) => candidate.name + suffix === name),
    )
    if (!owner?.type || owner.help === undefined) throw new Error(`sample of an undeclared family at ${where}`)
    owner.samples.push({ name, labels: parseLabels(sample[2] ?? ''), value: parseValue(sample[3]!) })
  })
  for (const each of families.values()) {
    if (each.help === undefined || each.type === undefined) throw new Error(`${each.name} lacks HELP or TYPE`)
  }
  return families
}

function parseLabels(text: string): Record<string, string> {
  const labels: Record<string, string> = {}
  for (const match of text.matchAll(new RegExp(`(${LABEL_NAME})=(${LABEL_VALUE})`, 'g'))) {
    const name = match[1]!
    if (name in labels) throw new Error(`label ${name} twice in {${text}}`)
    labels[name] = match[2]!.slice(1, -1).replace(/\\(.)/g, (_all, escaped: string) => (escaped === 'n' ? '\n' : escaped))
  }
  return labels
}

function parseValue(text: string): number {
  const lower = text.toLowerCase()
  if (lower === 'nan') return Number.NaN
  if (lower === '+inf') return Number.POSITIVE_INFINITY
  if (lower === '-inf') return Number.NEGATIVE_INFINITY
  return Number(text)
}

// --- Fixtures -----------------------------------------------------------------------------------

interface Rig {
  readonly metrics: Metrics
  readonly events: ShieldEvents
  readonly memory: StoreEventHub
  readonly redisEvents: StoreEventHub
  readonly clock: { now: number }
  readonly state: { snapshot: Snapshot | undefined; redisUp: boolean; role: Role; entries: number; bytes: number }
}

const opened: Metrics[] = []
afterEach(() => {
  for (const metrics of opened.splice(0)) metrics.close()
})

function rig(overrides: Partial<MetricsSources> = {}): Rig {
  const events = createShieldEvents()
  const memory = createStoreEvents()
  const redisEvents = createStoreEvents()
  const clock = { now: 1_700_000_000_000 }
  const state: Rig['state'] = { snapshot: undefined, redisUp: true, role: 'follower', entries: 0, bytes: 0 }
  const metrics = createMetrics({
    events,
    tiers: [
      { name: 'memory', events: memory, entries: () => state.entries, bytes: () => state.bytes },
      { name: 'redis', events: redisEvents },
    ],
    snapshot: () => state.snapshot,
    redis: { up: () => state.redisUp },
    role: () => state.role,
    now: () => clock.now,
    ...overrides,
  })
  opened.push(metrics)
  return { metrics, events, memory, redisEvents, clock, state }
}

async function scrape(metrics: Metrics): Promise<Map<string, Family>> {
  return parsePrometheusText(await metrics.render())
}

/** The value of the one sample of `name` whose labels include `labels`; undefined when there is none. */
function valueOf(families: Map<string, Family>, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const family of families.values()) {
    const matches = family.samples.filter(
      (sample) => sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value),
    )
    if (matches.length > 1) throw new Error(`${name} ${JSON.stringify(labels)} matches ${matches.length} samples`)
    if (matches.length === 1) return matches[0]!.value
  }
  return undefined
}

function snapshotAt(syncedAt: number, version = 7): Snapshot {
  return { ...makeSnapshot([{ id: 1, parent: null }, { id: 2, parent: 1 }, { id: 3, parent: 1 }], {}, version), syncedAt }
}

// --- Tests --------------------------------------------------------------------------------------

describe('render', () => {
  it('is valid Prometheus text in which every metric has HELP and TYPE and the cms_shield_ prefix', async () => {
    const { metrics, events, memory, state } = rig()
    state.snapshot = snapshotAt(1_699_999_990_000)
    events.emit('request', { route: 'list', method: 'GET', status: 200, cache: 'snapshot', durationMs: 0.3 })
    events.emit('upstream', { kind: 'detail', trafficClass: 'sync', status: 502, durationMs: 40 })
    events.emit('sync', { mode: 'full', result: 'changed', durationMs: 1200, detailsFetched: 3, pages: 3 })
    memory.emit('hit', { key: 'k' })

    const families = await scrape(metrics)
    expect(families.size).toBeGreaterThan(30)
    for (const family of families.values()) expect(family.name).toMatch(/^cms_shield_[a-z0-9_]+$/)
    // Default metrics are on, under the same prefix.
    expect(families.get('cms_shield_process_cpu_user_seconds_total')?.type).toBe('counter')
    expect(families.get('cms_shield_nodejs_heap_size_used_bytes')?.type).toBe('gauge')
  })

  it('answers with the Prometheus text content type', () => {
    expect(rig().metrics.contentType).toMatch(/^text\/plain; version=0\.0\.4/)
  })

  it('refuses two tiers of the same name', () => {
    const events = createStoreEvents()
    expect(() =>
      createMetrics({
        events: createShieldEvents(),
        tiers: [{ name: 'memory', events }, { name: 'memory', events }],
        snapshot: () => undefined,
        now: () => 0,
      }),
    ).toThrow(/one cache tier per name/)
  })
})

describe('HTTP requests', () => {
  it('counts each request by route, method, status and cache outcome, and times it in seconds', async () => {
    const { metrics, events } = rig()
    events.emit('request', { route: 'detail', method: 'GET', status: 200, cache: 'snapshot', durationMs: 0.4 })
    events.emit('request', { route: 'detail', method: 'GET', status: 200, cache: 'snapshot', durationMs: 3 })
    events.emit('request', { route: 'list', method: 'HEAD', status: 304, cache: 'hit', durationMs: 1 })

    const families = await scrape(metrics)
    expect(valueOf(families, 'cms_shield_http_requests_total', { route: 'detail', method: 'GET', status: '200', cache: 'snapshot' })).toBe(2)
    expect(valueOf(families, 'cms_shield_http_requests_total', { route: 'list', method: 'HEAD', status: '304', cache: 'hit' })).toBe(1)
    expect(valueOf(families, 'cms_shield_http_request_duration_seconds_count', { route: 'detail', cache: 'snapshot' })).toBe(2)
    expect(valueOf(families, 'cms_shield_http_request_duration_seconds_sum', { route: 'detail', cache: 'snapshot' })).toBeCloseTo(0.0034, 10)
    expect(valueOf(families, 'cms_shield_http_request_duration_seconds_bucket', { route: 'detail', cache: 'snapshot', le: '0.0005' })).toBe(1)
    expect(valueOf(families, 'cms_shield_http_request_duration_seconds_bucket', { route: 'detail', cache: 'snapshot', le: '+Inf' })).toBe(2)
  })

  it('counts stale answers by reason: revalidating for stale, cms-error for stale-error', async () => {
    const { metrics, events } = rig()
    expect(valueOf(await scrape(metrics), 'cms_shield_stale_responses_total', { reason: 'cms-error' })).toBe(0)
    events.emit('request', { route: 'list', method: 'GET', status: 200, cache: 'stale', durationMs: 1 })
    events.emit('request', { route: 'list', method: 'GET', status: 200, cache: 'stale-error', durationMs: 1 })
    events.emit('request', { route: 'list', method: 'GET', status: 200, cache: 'stale-error', durationMs: 1 })
    events.emit('request', { route: 'list', method: 'GET', status: 200, cache: 'miss', durationMs: 1 })

    const families = await scrape(metrics)
    expect(valueOf(families, 'cms_shield_stale_responses_total', { reason: 'revalidating' })).toBe(1)
    expect(valueOf(families, 'cms_shield_stale_responses_total', { reason: 'cms-error' })).toBe(2)
  })

  it('folds methods and statuses it does not know into bounded label values', async () => {
    const { metrics, events } = rig()
    events.emit('request', { route: 'other', method: 'BREW', status: 405, cache: 'none', durationMs: 1 })
    events.emit('request', { route: 'other', method: 'purge', status: 42, cache: 'none', durationMs: 1 })

    const families = await scrape(metrics)
    expect(valueOf(families, 'cms_shield_http_requests_total', { method: 'other', status: '405' })).toBe(1)
    expect(valueOf(families, 'cms_shield_http_requests_total', { method: 'PURGE', status: 'other' })).toBe(1)
  })

  it('does not observe a duration that is not a number, but still counts the request', async () => {
    const { metrics, events } = rig()
    events.emit('request', { route: 'find', method: 'GET', status: 302, cache: 'snapshot', durationMs: Number.NaN })

    const families = await scrape(metrics)
    expect(valueOf(families, 'cms_shield_http_requests_total', { route: 'find' })).toBe(1)
    expect(valueOf(families, 'cms_shield_http_request_duration_seconds_count', { route: 'find' })).toBeUndefined()
  })
})

describe('CMS requests', () => {
  it('labels each attempt with its status code, error or timeout, and times it by kind', async () => {
    const { metrics, events } = rig()
    events.emit('upstream', { kind: 'list', trafficClass: 'sync', status: 200, durationMs: 25 })
    events.emit('upstream', { kind: 'list', trafficClass: 'sync', status: 200, durationMs: 35 })
    events.emit('upstream', { kind: 'detail', trafficClass: 'sync', status: 'error', durationMs: 3 })
    events.emit('upstream', { kind: 'detail', trafficClass: 'sync', status: 'timeout', durationMs: 10_000 })

    const families = await scrape(metrics)
    expect(valueOf(families, 'cms_shield_cms_requests_total', { kind: 'list', status: '200' })).toBe(2)
    expect(valueOf(families, 'cms_shield_cms_requests_total', { kind: 'detail', status: 'error' })).toBe(1)
    expect(valueOf(families, 'cms_shield_cms_requests_total', { kind: 'detail', status: 'timeout' })).toBe(1)
    expect(valueOf(families, 'cms_shield_cms_request_duration_seconds_sum', { kind: 'list' })).toBeCloseTo(0.06, 10)
    expect(valueOf(families, 'cms_shield_cms_request_duration_seconds_bucket', { kind: 'detail', le: '10' })).toBe(2)
    expect(valueOf(families, 'cms_shield_cms_request_duration_seconds_bucket', { kind: 'detail', le: '5' })).toBe(1)
  })
})

describe('sync and snapshots', () => {
  it('counts sync runs by mode and result, their details and duration, with every series present from the start', async () => {
    const { metrics, events } = rig()
    let families = await scrape(metrics)
    expect(valueOf(families, 'cms_shield_sync_runs_total', { mode: 'incremental', result: 'failed' })).toBe(0)
    expect(valueOf(families, 'cms_shield_sync_last_success_timestamp_seconds')).toBeUndefined()

    events.emit('sync', { mode: 'full', result: 'changed', durationMs: 2500, detailsFetched: 89, pages: 89 })
    events.emit('sync', { mode: 'incremental', result: 'unchanged', durationMs: 300, detailsFetched: 0, pages: 89 })
    events.emit('sync', { mode: 'incremental', result: 'changed', durationMs: 400, detailsFetched: 2, pages: 89 })
    events.emit('sync', { mode: 'incremental', result: 'failed', durationMs: 10_000, detailsFetched: 0, pages: 0 })

    families = await scrape(metrics)
    expect(valueOf(families, 'cms_shield_sync_runs_total', { mode: 'full', result: 'changed' })).toBe(1)
    expect(valueOf(families, 'cms_shield_sync_runs_total', { mode: 'incremental', result: 'unchanged' })).toBe(1)
    expect(valueOf(families, 'cms_shield_sync_runs_total', { mode: 'incremental', result: 'failed' })).toBe(1)
    expect(valueOf(families, 'cms_shield_sync_details_fetched_total', { mode: 'full' })).toBe(89)
    expect(valueOf(families, 'cms_shield_sync_details_fetched_total', { mode: 'incremental' })).toBe(2)
    expect(valueOf(families, 'cms_shield_sync_duration_seconds_count', { mode: 'incremental' })).toBe(3)
    expect(valueOf(families, 'cms_shield_sync_duration_seconds_sum', { mode: 'full' })).toBe(2.5)
  })

  it('records when the last sync that succeeded ended, from the injected clock; a failure does not move it', async () => {
    const { metrics, events, clock } = rig()
    clock.now = 1_700_000_100_000
    events.emit('sync', { mode: 'incremental', result: 'unchanged', durationMs: 1, detailsFetched: 0, pages: 3 })
    clock.now = 1_700_000_200_000
    events.emit('sync', { mode: 'incremental', result: 'failed', durationMs: 1, detailsFetched: 0, pages: 0 })

    expect(valueOf(await scrape(metrics), 'cms_shield_sync_last_success_timestamp_seconds')).toBe(1_700_000_100)
  })

  it('counts swaps by source, and changed pages only for snapshots synced here', async () => {
    const { metrics, events } = rig()
    events.emit('snapshot', { version: 1, fingerprint: 'f1', pages: 89, syncedAt: 0, source: 'storage', changedPages: 89 })
    events.emit('snapshot', { version: 2, fingerprint: 'f2', pages: 89, syncedAt: 0, source: 'sync', changedPages: 3 })
    events.emit('snapshot', { version: 3, fingerprint: 'f3', pages: 90, syncedAt: 0, source: 'sync', changedPages: 1 })
    events.emit('snapshot', { version: 4, fingerprint: 'f4', pages: 90, syncedAt: 0, source: 'peer', changedPages: 5 })

    const families = await scrape(metrics)
    expect(valueOf(families, 'cms_shield_snapshot_swaps_total', { source: 'storage' })).toBe(1)
    expect(valueOf(families, 'cms_shield_snapshot_swaps_total', { source: 'sync' })).toBe(2)
    expect(valueOf(families, 'cms_shield_snapshot_swaps_total', { source: 'peer' })).toBe(1)
    expect(valueOf(families, 'cms_shield_sync_pages_changed_total')).toBe(4)
  })

  it('leaves the snapshot gauges absent until a snapshot is served', async () => {
    const families = await scrape(rig().metrics)
    for (const name of ['version', 'pages', 'age_seconds', 'synced_timestamp_seconds']) {
      expect(families.get(`cms_shield_snapshot_${name}`)?.type).toBe('gauge')
      expect(families.get(`cms_shield_snapshot_${name}`)?.samples).toEqual([])
    }
  })

  it('reads the snapshot gauges from the source at scrape time, the age from the injected clock', async () => {
    const { metrics, clock, state } = rig()
    state.snapshot = snapshotAt(1_700_000_000_000, 7)
    clock.now = 1_700_000_042_500

    let families = await scrape(metrics)
    expect(valueOf(families, 'cms_shield_snapshot_version')).toBe(7)
    expect(valueOf(families, 'cms_shield_snapshot_pages')).toBe(3)
    expect(valueOf(families, 'cms_shield_snapshot_synced_timestamp_seconds')).toBe(1_700_000_000)
    expect(valueOf(families, 'cms_shield_snapshot_age_seconds')).toBe(42.5)

    // No event: the next scrape sees the new snapshot and the clock as they are then.
    state.snapshot = snapshotAt(1_700_000_050_000, 8)
    clock.now = 1_700_000_060_000
    families = await scrape(metrics)
    expect(valueOf(families, 'cms_shield_snapshot_version')).toBe(8)
    expect(valueOf(families, 'cms_shield_snapshot_age_seconds')).toBe(10)
  })

  it("reads the sync's safety net at scrape time, and leaves its series absent while the instance runs none", async () => {
    const source: { net?: NetProgress } = {}
    const { metrics, clock } = rig({ net: () => source.net })
    let families = await scrape(metrics)
    expect(families.get('cms_shield_sync_net_verification_age_seconds')?.samples).toEqual([])
    const since = clock.now
    clock.now = since + 100_000
    source.net = { budget: 0.05, lastWalkEndedAt: since + 40_000, oldestVerifiedAt: since - 3_600_000, walkCmsMs: 3_000, verifyCmsMs: 1_000, since }
    families = await scrape(metrics)
    expect(valueOf(families, 'cms_shield_sync_net_budget_ratio')).toBe(0.05)
    expect(valueOf(families, 'cms_shield_sync_net_budget_used_ratio')).toBe(0.04)
    expect(valueOf(families, 'cms_shield_sync_net_cms_seconds', { part: 'walk' })).toBe(3)
    expect(valueOf(families, 'cms_shield_sync_net_cms_seconds', { part: 'verify' })).toBe(1)
    expect(valueOf(families, 'cms_shield_sync_net_last_walk_timestamp_seconds')).toBe((since + 40_000) / 1000)
    expect(valueOf(families, 'cms_shield_sync_net_verification_age_seconds')).toBe(3_700)
  })

  it('never reports a negative age for a snapshot stamped by a clock ahead of ours', async () => {
    const { metrics, clock, state } = rig()
    state.snapshot = snapshotAt(clock.now + 5000)
    expect(valueOf(await scrape(metrics), 'cms_shield_snapshot_age_seconds')).toBe(0)
  })
})

describe('cache tiers', () => {
  it('counts hits, misses, evictions and errors per tier from the tiers’ own events', async () => {
    const { metrics, memory, redisEvents } = rig()
    memory.emit('hit', { key: 'a' })
    memory.emit('hit', { key: 'b' })
    memory.emit('miss', { key: 'c', reason: 'expired' })
    memory.emit('evict', { key: 'c', reason: 'size' })
    redisEvents.emit('miss', { key: 'a', reason: 'error' })
    redisEvents.emit('error', { operation: 'get', key: 'a', error: new Error('timed out'), timedOut: true })
    redisEvents.emit('error', { operation: 'set', key: 'a', error: new Error('ECONNRESET'), timedOut: false })

    const families = await scrape(metrics)
    expect(valueOf(families, 'cms_shield_cache_hits_total', { tier: 'memory' })).toBe(2)
    expect(valueOf(families, 'cms_shield_cache_hits_total', { tier: 'redis' })).toBe(0)
    expect(valueOf(families, 'cms_shield_cache_misses_total', { tier: 'memory', reason: 'expired' })).toBe(1)
    expect(valueOf(families, 'cms_shield_cache_misses_total', { tier: 'redis', reason: 'error' })).toBe(1)
    expect(valueOf(families, 'cms_shield_cache_evictions_total', { tier: 'memory', reason: 'size' })).toBe(1)
    expect(valueOf(families, 'cms_shield_cache_errors_total', { tier: 'redis', operation: 'get', timed_out: 'true' })).toBe(1)
    expect(valueOf(families, 'cms_shield_cache_errors_total', { tier: 'redis', operation: 'set', timed_out: 'false' })).toBe(1)
  })

  it('never puts a cache key, URL or query into a label', async () => {
    const { metrics, memory, redisEvents } = rig()
    // No digits in the marker: the process metrics' own values (bytes, seconds) may hold any run of digits.
    const key = '/api/v1/cms/pages/?search=secret-query&child_of=marker-page'
    memory.emit('hit', { key })
    memory.emit('miss', { key, reason: 'absent' })
    memory.emit('evict', { key, reason: 'expired' })
    redisEvents.emit('error', { operation: 'delete', key, error: new Error(`failed on ${key}`), timedOut: false })

    const text = await metrics.render()
    expect(text).not.toContain('secret-query')
    expect(text).not.toContain('marker-page')
    expect(text).not.toContain('/api/v1/cms/pages/')
  })

  it('reads entries and bytes at scrape time, for the tiers that can tell', async () => {
    const { metrics, state } = rig()
    state.entries = 12
    state.bytes = 34_567

    let families = await scrape(metrics)
    expect(valueOf(families, 'cms_shield_cache_entries', { tier: 'memory' })).toBe(12)
    expect(valueOf(families, 'cms_shield_cache_bytes', { tier: 'memory' })).toBe(34_567)
    expect(valueOf(families, 'cms_shield_cache_entries', { tier: 'redis' })).toBeUndefined()

    state.entries = 0
    state.bytes = 0
    families = await scrape(metrics)
    expect(valueOf(families, 'cms_shield_cache_entries', { tier: 'memory' })).toBe(0)
    expect(valueOf(families, 'cms_shield_cache_bytes', { tier: 'memory' })).toBe(0)
  })

  it('follows a real memory store: its events and its size', async () => {
    let now = 0
    const store = createMemoryStore({ maxBytes: 1_000_000, now: () => now })
    const metrics = createMetrics({
      events: createShieldEvents(),
      tiers: [{ name: 'memory', events: store, entries: () => store.entries, bytes: () => store.bytes }],
      snapshot: () => undefined,
      now: () => now,
    })
    opened.push(metrics)
    await store.set('a', { value: Buffer.from('{"x":1}'), storedAt: 0 }, 1000)
    await store.get('a')
    await store.get('b')
    now = 2000
    await store.get('a')

    const families = await scrape(metrics)
    expect(valueOf(families, 'cms_shield_cache_hits_total', { tier: 'memory' })).toBe(1)
    expect(valueOf(families, 'cms_shield_cache_misses_total', { tier: 'memory', reason: 'absent' })).toBe(1)
    expect(valueOf(families, 'cms_shield_cache_misses_total', { tier: 'memory', reason: 'expired' })).toBe(1)
    expect(valueOf(families, 'cms_shield_cache_evictions_total', { tier: 'memory', reason: 'expired' })).toBe(1)
    expect(valueOf(families, 'cms_shield_cache_entries', { tier: 'memory' })).toBe(store.entries)
    expect(valueOf(families, 'cms_shield_cache_bytes', { tier: 'memory' })).toBe(store.bytes)
  })
})

describe('Redis and role', () => {
  it('reports Redis as up or down as the source says at scrape time', async () => {
    const { metrics, state } = rig()
    expect(valueOf(await scrape(metrics), 'cms_shield_redis_up')).toBe(1)
    state.redisUp = false
    expect(valueOf(await scrape(metrics), 'cms_shield_redis_up')).toBe(0)
  })

  it('sets the current role to 1 and the others to 0, and leader to 1 only for the leader', async () => {
    const { metrics, state } = rig()
    let families = await scrape(metrics)
    expect(valueOf(families, 'cms_shield_role', { role: 'follower' })).toBe(1)
    expect(valueOf(families, 'cms_shield_role', { role: 'leader' })).toBe(0)
    expect(valueOf(families, 'cms_shield_role', { role: 'standalone' })).toBe(0)
    expect(valueOf(families, 'cms_shield_leader')).toBe(0)

    state.role = 'leader'
    families = await scrape(metrics)
    expect(valueOf(families, 'cms_shield_role', { role: 'leader' })).toBe(1)
    expect(valueOf(families, 'cms_shield_role', { role: 'follower' })).toBe(0)
    expect(valueOf(families, 'cms_shield_leader')).toBe(1)

    state.role = 'standalone'
    families = await scrape(metrics)
    expect(valueOf(families, 'cms_shield_role', { role: 'standalone' })).toBe(1)
    expect(valueOf(families, 'cms_shield_leader')).toBe(0)
  })

  it('counts role changes by the role taken', async () => {
    const { metrics, events } = rig()
    events.emit('role', { role: 'leader' })
    events.emit('role', { role: 'standalone' })
    events.emit('role', { role: 'leader' })

    const families = await scrape(metrics)
    expect(valueOf(families, 'cms_shield_role_changes_total', { role: 'leader' })).toBe(2)
    expect(valueOf(families, 'cms_shield_role_changes_total', { role: 'standalone' })).toBe(1)
    expect(valueOf(families, 'cms_shield_role_changes_total', { role: 'follower' })).toBe(0)
  })

  it('leaves a source that throws absent from the scrape, and serves every other metric', async () => {
    const warnings: string[] = []
    const onWarning = (warning: Error) => void warnings.push(warning.message)
    process.on('warning', onWarning)
    try {
      const { metrics, events } = rig({ redis: { up: () => { throw new Error('client gone') } } })
      events.emit('webhook', { result: 'accepted' })
      const families = await scrape(metrics)
      expect(families.get('cms_shield_redis_up')?.samples).toEqual([])
      expect(valueOf(families, 'cms_shield_webhook_requests_total', { result: 'accepted' })).toBe(1)
      await new Promise((resolve) => setImmediate(resolve))
      expect(warnings).toContainEqual(expect.stringContaining('cms_shield_redis_up could not be read: Error: client gone'))
    } finally {
      process.off('warning', onWarning)
    }
  })

  it('exposes no redis_up, role or leader without Redis', async () => {
    const metrics = createMetrics({ events: createShieldEvents(), tiers: [], snapshot: () => undefined, now: () => 0 })
    opened.push(metrics)
    const families = await scrape(metrics)
    expect(families.has('cms_shield_redis_up')).toBe(false)
    expect(families.has('cms_shield_role')).toBe(false)
    expect(families.has('cms_shield_leader')).toBe(false)
  })
})

describe('PURGE and webhook', () => {
  it('counts PURGE requests by result and target, and webhook calls by result', async () => {
    const { metrics, events } = rig()
    events.emit('purge', { result: 'accepted', target: 'page' })
    events.emit('purge', { result: 'accepted', target: 'page' })
    events.emit('purge', { result: 'refused', target: 'unknown' })
    events.emit('webhook', { result: 'unauthorized' })

    const families = await scrape(metrics)
    expect(valueOf(families, 'cms_shield_purge_requests_total', { result: 'accepted', target: 'page' })).toBe(2)
    expect(valueOf(families, 'cms_shield_purge_requests_total', { result: 'refused', target: 'unknown' })).toBe(1)
    expect(valueOf(families, 'cms_shield_purge_requests_total', { result: 'accepted', target: 'listing' })).toBe(0)
    expect(valueOf(families, 'cms_shield_webhook_requests_total', { result: 'unauthorized' })).toBe(1)
    expect(valueOf(families, 'cms_shield_webhook_requests_total', { result: 'accepted' })).toBe(0)
  })

  it('counts CDN purges by target and outcome, from 0 for the targets configured, and observes keys and lag of acknowledged ones', async () => {
    const { metrics, events } = rig({ cdnTargets: ['varnish', 'fastly'] })
    events.emit('cdnPurge', { target: 'varnish', outcome: 'retried', keys: 3, lagMs: 200 })
    events.emit('cdnPurge', { target: 'varnish', outcome: 'ok', keys: 3, lagMs: 1_700 })
    events.emit('cdnPurge', { target: 'fastly', outcome: 'failed', keys: 1, lagMs: 50 })

    const families = await scrape(metrics)
    expect(valueOf(families, 'cms_shield_cdn_purges_total', { target: 'varnish', outcome: 'ok' })).toBe(1)
    expect(valueOf(families, 'cms_shield_cdn_purges_total', { target: 'varnish', outcome: 'retried' })).toBe(1)
    expect(valueOf(families, 'cms_shield_cdn_purges_total', { target: 'fastly', outcome: 'failed' })).toBe(1)
    expect(valueOf(families, 'cms_shield_cdn_purges_total', { target: 'fastly', outcome: 'ok' })).toBe(0)
    expect(valueOf(families, 'cms_shield_cdn_purges_total', { target: 'cloudflare', outcome: 'ok' })).toBeUndefined()
    expect(valueOf(families, 'cms_shield_cdn_purge_keys_count', { target: 'varnish' })).toBe(1)
    expect(valueOf(families, 'cms_shield_cdn_purge_keys_sum', { target: 'varnish' })).toBe(3)
    expect(valueOf(families, 'cms_shield_cdn_purge_lag_seconds_sum', { target: 'varnish' })).toBeCloseTo(1.7)
    expect(valueOf(families, 'cms_shield_cdn_purge_lag_seconds_count', { target: 'fastly' })).toBeUndefined()
  })

  it('counts how each CDN purge\'s wait for the other instances ended, from 0 when a target is configured', async () => {
    const { metrics, events } = rig({ cdnTargets: ['varnish'] })
    events.emit('purgeGate', { result: 'confirmed', waitedMs: 40 })
    events.emit('purgeGate', { result: 'confirmed', waitedMs: 10 })
    events.emit('purgeGate', { result: 'timeout', waitedMs: 5000 })

    const families = await scrape(metrics)
    expect(valueOf(families, 'cms_shield_cdn_purge_gate_total', { result: 'confirmed' })).toBe(2)
    expect(valueOf(families, 'cms_shield_cdn_purge_gate_total', { result: 'timeout' })).toBe(1)
    expect(valueOf(families, 'cms_shield_cdn_purge_gate_total', { result: 'unavailable' })).toBe(0)
    expect(valueOf(families, 'cms_shield_cdn_purge_gate_total', { result: 'standalone' })).toBe(0)
  })
})

describe('isolation', () => {
  it('keeps two instances in one process apart: own registries, own counts', async () => {
    const first = rig()
    const second = rig()
    expect(first.metrics.registry).not.toBe(second.metrics.registry)
    first.events.emit('webhook', { result: 'accepted' })
    first.events.emit('webhook', { result: 'accepted' })
    second.events.emit('webhook', { result: 'accepted' })

    expect(valueOf(await scrape(first.metrics), 'cms_shield_webhook_requests_total', { result: 'accepted' })).toBe(2)
    expect(valueOf(await scrape(second.metrics), 'cms_shield_webhook_requests_total', { result: 'accepted' })).toBe(1)
  })

  it('stops counting after close(), and leaves no listener on any hub', async () => {
    const { metrics, events, memory, redisEvents } = rig()
    events.emit('purge', { result: 'accepted', target: 'listing' })
    memory.emit('hit', { key: 'k' })
    metrics.close()
    events.emit('purge', { result: 'accepted', target: 'listing' })
    events.emit('request', { route: 'list', method: 'GET', status: 200, cache: 'hit', durationMs: 1 })
    memory.emit('hit', { key: 'k' })

    const families = await scrape(metrics)
    expect(valueOf(families, 'cms_shield_purge_requests_total', { result: 'accepted', target: 'listing' })).toBe(1)
    expect(valueOf(families, 'cms_shield_cache_hits_total', { tier: 'memory' })).toBe(1)
    expect(valueOf(families, 'cms_shield_http_requests_total', { route: 'list' })).toBeUndefined()
    for (const event of ['request', 'upstream', 'sync', 'snapshot', 'purge', 'webhook', 'role', 'purgeGate'] as const) expect(events.listens(event)).toBe(false)
    for (const event of ['hit', 'miss', 'evict', 'error'] as const) {
      expect(memory.listens(event)).toBe(false)
      expect(redisEvents.listens(event)).toBe(false)
    }
  })
})

describe('the test’s own text reader', () => {
  it('rejects samples of undeclared metrics, missing HELP, and malformed lines', () => {
    expect(() => parsePrometheusText('# HELP a_total x\n# TYPE a_total counter\na_total 1\n')).not.toThrow()
    expect(() => parsePrometheusText('a_total 1\n')).toThrow(/undeclared/)
    expect(() => parsePrometheusText('# TYPE a gauge\na 1\n')).toThrow(/undeclared/)
    expect(() => parsePrometheusText('# HELP a x\n# TYPE a gauge\na{b=c} 1\n')).toThrow(/not a sample/)
    expect(() => parsePrometheusText('# HELP a x\n# TYPE a gauge\na one\n')).toThrow(/not a sample/)
    expect(() => parsePrometheusText('# HELP a x\n')).toThrow(/lacks HELP or TYPE/)
    expect(parsePrometheusText('# HELP h x\n# TYPE h histogram\nh_bucket{le="+Inf",q="a\\"b"} 2\nh_sum 1.5e-3\nh_count 2\n').get('h')?.samples).toEqual([
      { name: 'h_bucket', labels: { le: '+Inf', q: 'a"b' }, value: 2 },
      { name: 'h_sum', labels: {}, value: 0.0015 },
      { name: 'h_count', labels: {}, value: 2 },
    ])
  })
})
