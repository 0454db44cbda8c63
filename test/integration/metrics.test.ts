/**
 * `/metrics` on the real app: valid Prometheus text, and counters that move with traffic, syncs,
 * CMS failures, stale answers and purges.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { startShield, type Harness } from '../helpers/start-shield.js'

let h: Harness | undefined
afterEach(async () => {
  await h?.close()
  h = undefined
})

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*",?)*\})? (-?[0-9.e+-]+|NaN|Nan|\+Inf|-Inf)$/

/** Every sample line, checked against the text format; `name{labels}` → value. */
async function scrape(harness: Harness): Promise<Map<string, number>> {
  const response = await harness.app.inject({ method: 'GET', url: '/metrics' })
  expect(response.statusCode).toBe(200)
  expect(response.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/)
  const samples = new Map<string, number>()
  const typed = new Set<string>()
  for (const line of response.body.split('\n')) {
    if (line === '') continue
    if (line.startsWith('# TYPE ')) typed.add(line.split(' ')[2]!)
    if (line.startsWith('#')) continue
    const match = SAMPLE.exec(line)
    expect(match, line).not.toBeNull()
    samples.set(`${match![1]}${match![2] ?? ''}`, Number(match![3]))
  }
  for (const key of samples.keys()) {
    const name = key.split('{')[0]!
    expect(typed.has(name) || typed.has(name.replace(/_(bucket|sum|count)$/, '')), name).toBe(true)
  }
  return samples
}

const sum = (samples: Map<string, number>, prefix: string, ...labels: string[]) =>
  [...samples].filter(([key]) => key.startsWith(prefix) && labels.every((l) => key.includes(l))).reduce((total, [, value]) => total + value, 0)

describe('/metrics', () => {
  it('counts requests by route, status and cache outcome, and CMS requests by kind and status', async () => {
    h = await startShield()
    const before = await scrape(h)
    for (let i = 0; i < 3; i++) await h.get('/api/v1/cms/pages/?limit=2')
    await h.get('/api/v1/cms/pages/?search=a')
    await h.get('/api/v1/cms/pages/?search=a')
    await h.get('/api/v1/cms/pages/?limit=abc')
    const after = await scrape(h)
    const delta = (prefix: string, ...labels: string[]) => sum(after, prefix, ...labels) - sum(before, prefix, ...labels)
    expect(delta('cms_shield_http_requests_total', 'route="list"', 'status="200"', 'cache="snapshot"')).toBe(3)
    expect(delta('cms_shield_http_requests_total', 'route="list"', 'cache="miss"')).toBe(1)
    expect(delta('cms_shield_http_requests_total', 'route="list"', 'cache="hit"')).toBe(1)
    expect(delta('cms_shield_http_requests_total', 'route="list"', 'status="400"')).toBe(1)
    expect(delta('cms_shield_http_request_duration_seconds_count', 'route="list"')).toBe(6)
    expect(delta('cms_shield_cms_requests_total', 'kind="list"', 'status="200"')).toBe(1)
    expect(delta('cms_shield_cache_misses_total', 'tier="memory"')).toBeGreaterThanOrEqual(1)
    expect(delta('cms_shield_cache_hits_total', 'tier="memory"')).toBe(1)
    expect(sum(after, 'cms_shield_snapshot_pages')).toBe(89)
    expect(sum(after, 'cms_shield_cache_entries', 'tier="memory"')).toBe(1)
  })

  it('counts syncs by mode and result, and CMS failures by status', async () => {
    h = await startShield()
    const before = await scrape(h)
    expect(sum(before, 'cms_shield_sync_runs_total', 'mode="full"', 'result="changed"')).toBe(1)
    await h.app.shield.sync.syncNow()
    h.origin.setFault((ctx) => (ctx.kind === 'list' ? { type: 'status', status: 503 } : undefined))
    await h.app.shield.sync.syncNow()
    h.origin.setFault(undefined)
    const page = h.app.shield.sync.current!.pages.at(3)!
    h.origin.updatePage(page.id, { title: 'Counted' })
    await h.app.shield.sync.syncNow()
    const after = await scrape(h)
    expect(sum(after, 'cms_shield_sync_runs_total', 'mode="incremental"', 'result="unchanged"')).toBe(1)
    expect(sum(after, 'cms_shield_sync_runs_total', 'mode="incremental"', 'result="failed"')).toBe(1)
    expect(sum(after, 'cms_shield_sync_runs_total', 'mode="incremental"', 'result="changed"')).toBe(1)
    expect(sum(after, 'cms_shield_cms_requests_total', 'status="503"')).toBeGreaterThanOrEqual(1)
    expect(sum(after, 'cms_shield_snapshot_version')).toBe(2)
    expect(sum(after, 'cms_shield_sync_details_fetched_total', 'mode="incremental"')).toBeGreaterThanOrEqual(1)
  })

  it('counts stale answers while the CMS fails, and PURGE calls by result', async () => {
    h = await startShield({ env: { CACHE_TTL: '0s', CACHE_STALE_WHILE_REVALIDATE: '0s', CACHE_STALE_IF_ERROR: '1h', PURGE_ALLOW: '10.0.0.0/8' } })
    await h.get('/api/v1/cms/pages/?search=b')
    h.origin.setFault(() => ({ type: 'status', status: 500 }))
    const stale = await h.get('/api/v1/cms/pages/?search=b')
    expect(stale.headers['cache-status']).toMatch(/cms-error/)
    await h.app.inject({ method: 'PURGE', url: '/api/v1/cms/pages/3/' })
    const after = await scrape(h)
    expect(sum(after, 'cms_shield_stale_responses_total', 'reason="cms-error"')).toBe(1)
    expect(sum(after, 'cms_shield_purge_requests_total', 'result="refused"')).toBe(1)
  })
})
