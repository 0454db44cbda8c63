/**
 * CDN purging end to end: the real app syncing from the fake Wagtail, purging a recording Varnish
 * and a fake Fastly over real HTTP (docs/cdn-purging.md). An edit purges once, with the edited
 * page's key; an unchanged sync purges nothing; answers carry `s-maxage` (and `Surrogate-Control`
 * with Fastly) on both writers, 304s included; a purge target that is down blocks nothing.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { request } from 'undici'
import { readSnapshotMetadata } from '../../src/persist/snapshot-codec.js'
import { afterEach, describe, expect, it } from 'vitest'
import { startFakeFastly, startVarnishRecorder, type FakePurgeApi } from '../helpers/fake-purge-apis.js'
import { startShield, type Harness } from '../helpers/start-shield.js'

const FASTLY = { serviceId: 'cms-shield-test', token: 'fastly-test-token' }

const harnesses: Harness[] = []
const fakes: FakePurgeApi[] = []
afterEach(async () => {
  for (const h of harnesses.splice(0)) await h.close()
  await Promise.all(fakes.splice(0).map((fake) => fake.close()))
})

async function withPurgeTargets(env: Record<string, string> = {}) {
  const varnish = await startVarnishRecorder()
  const fastly = await startFakeFastly(FASTLY)
  fakes.push(varnish, fastly)
  const h = await startShield({
    env: {
      CDN_PURGE_VARNISH: varnish.url,
      FASTLY_SERVICE_ID: FASTLY.serviceId,
      FASTLY_API_TOKEN: FASTLY.token,
      FASTLY_API_URL: fastly.url,
      CDN_MAX_AGE: '2h',
      ...env,
    },
  })
  harnesses.push(h)
  // The first sync had nothing to compare with: it purged everything once.
  await h.app.shield.cdn.idle()
  expect(varnish.purgedKeys()).toEqual(['cms-pages'])
  varnish.reset()
  fastly.reset()
  return { h, varnish, fastly }
}

function leafOf(h: Harness) {
  const snapshot = h.app.shield.sync.current!
  return snapshot.pages.slice().find((p) => p.parentId !== null && !snapshot.childrenOf.has(p.id) && p.type === 'cms.GenericPage')!
}

describe('CDN purging after a sync', () => {
  it('sends exactly one PURGE, naming the edited page, to Varnish and to Fastly after an edit, and none after an unchanged sync', async () => {
    const { h, varnish, fastly } = await withPurgeTargets()
    const leaf = leafOf(h)
    const carried = String((await h.get(`/api/v1/cms/pages/${leaf.id}/`)).headers['surrogate-key']).split(' ')
    h.origin.updatePage(leaf.id, { title: `${leaf.title} (edited)` })
    expect(await h.app.shield.sync.syncNow()).toMatchObject({ ok: true, changed: true })
    await h.app.shield.cdn.idle()

    expect(varnish.requests).toHaveLength(1)
    expect(varnish.purges[0]!.keys).toContain(`cms-page-${leaf.id}`)
    expect(varnish.purges[0]!.headers['xkey-purge']).toBe(varnish.purges[0]!.keys.join(' '))
    expect(fastly.purges).toHaveLength(1)
    expect([...fastly.purges[0]!.keys].sort()).toEqual([...varnish.purges[0]!.keys].sort())
    // Of the keys the edited page's detail carried, its own: not its parent's summary, nor the
    // places above it, which the retitle did not change.
    const detail = await h.get(`/api/v1/cms/pages/${leaf.id}/`)
    expect(JSON.parse(detail.body).title).toBe(`${leaf.title} (edited)`)
    expect(carried.filter((key) => varnish.purges[0]!.keys.includes(key))).toEqual([`cms-page-${leaf.id}`])

    varnish.reset()
    fastly.reset()
    expect(await h.app.shield.sync.syncNow()).toMatchObject({ ok: true, changed: false })
    await h.app.shield.cdn.idle()
    expect(varnish.requests).toEqual([])
    expect(fastly.requests).toEqual([])
  })

  it('purges only once the new snapshot is stored', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cms-shield-cdn-'))
    const file = join(dir, 'snapshot.bin')
    const storedAtPurge: string[] = []
    const varnish = await startVarnishRecorder({
      onPurge: () => {
        try {
          const metadata = readSnapshotMetadata(readFileSync(file))
          storedAtPurge.push(metadata.ok ? metadata.metadata.fingerprint : `unreadable: ${metadata.reason}`)
        } catch (error) {
          storedAtPurge.push(`not stored: ${String(error)}`)
        }
      },
    })
    fakes.push(varnish)
    try {
      // Every change stored whole, so the file alone tells which snapshot was stored at each purge.
      const h = await startShield({ env: { CDN_PURGE_VARNISH: varnish.url, SNAPSHOT_FILE: file, SNAPSHOT_PATCHES_PER_FULL: '0' } })
      harnesses.push(h)
      await h.app.shield.cdn.idle()
      const leaf = leafOf(h)
      h.origin.updatePage(leaf.id, { title: `${leaf.title} (stored)` })
      await h.app.shield.sync.syncNow()
      await h.app.shield.cdn.idle()
      expect(storedAtPurge).toHaveLength(2)
      expect(storedAtPurge[1]).toBe(h.app.shield.sync.current!.fingerprint)
    } finally {
      for (const h of harnesses.splice(0)) await h.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('soft-purges with xkey-softpurge and Fastly-Soft-Purge under CDN_SOFT_PURGE', async () => {
    const { h, varnish, fastly } = await withPurgeTargets({ CDN_SOFT_PURGE: 'true' })
    const leaf = leafOf(h)
    h.origin.updatePage(leaf.id, { title: `${leaf.title} (soft)` })
    await h.app.shield.sync.syncNow()
    await h.app.shield.cdn.idle()
    expect(varnish.purges).toEqual([expect.objectContaining({ soft: true })])
    expect(varnish.purges[0]!.headers['xkey-purge']).toBeUndefined()
    expect(fastly.purges).toEqual([expect.objectContaining({ soft: true })])
  })

  it('keeps syncing and serving while the only purge target cannot be reached, and closes without waiting for it', async () => {
    const gone = await startVarnishRecorder()
    await gone.close()
    const h = await startShield({ env: { CDN_PURGE_VARNISH: gone.url } })
    harnesses.push(h)
    const leaf = leafOf(h)
    h.origin.updatePage(leaf.id, { title: `${leaf.title} (no cdn)` })
    expect(await h.app.shield.sync.syncNow()).toMatchObject({ ok: true, changed: true })
    const detail = await h.get(`/api/v1/cms/pages/${leaf.id}/`)
    expect(detail.status).toBe(200)
    expect(JSON.parse(detail.body).title).toBe(`${leaf.title} (no cdn)`)
  })
})

describe('caching headers with a purge target', () => {
  it('adds s-maxage to Cache-Control and Surrogate-Control with Fastly, on 200s and 304s, alike on the fast path and through Fastify', async () => {
    const varnish = await startVarnishRecorder()
    const fastly = await startFakeFastly(FASTLY)
    fakes.push(varnish, fastly)
    const env = { CDN_PURGE_VARNISH: varnish.url, FASTLY_SERVICE_ID: FASTLY.serviceId, FASTLY_API_TOKEN: FASTLY.token, FASTLY_API_URL: fastly.url, CDN_MAX_AGE: '2h' }
    const origins: string[] = []
    for (const fastPath of ['true', 'false']) {
      const h = await startShield({ env: { ...env, FAST_PATH: fastPath } })
      harnesses.push(h)
      await h.app.listen({ port: 0, host: '127.0.0.1' })
      origins.push(`http://127.0.0.1:${(h.app.server.address() as { port: number }).port}`)
    }
    const leaf = leafOf(harnesses[0]!)
    const seen: Array<Record<string, unknown>> = []
    for (const origin of origins) {
      for (const path of ['/api/v1/cms/pages/', `/api/v1/cms/pages/${leaf.id}/`, '/api/v1/cms/pages/?search=page']) {
        const full = await request(origin + path)
        await full.body.dump()
        expect(full.statusCode).toBe(200)
        const etag = String(full.headers['etag'])
        const revalidated = await request(origin + path, { headers: { 'if-none-match': etag } })
        await revalidated.body.dump()
        expect(revalidated.statusCode).toBe(304)
        for (const answer of [full, revalidated]) {
          expect(answer.headers['cache-control']).toBe('public, max-age=30, s-maxage=7200, stale-while-revalidate=60, stale-if-error=86400')
          expect(answer.headers['surrogate-control']).toBe('max-age=7200')
          seen.push({ path, status: answer.statusCode, cc: answer.headers['cache-control'], sc: answer.headers['surrogate-control'] })
        }
      }
    }
    expect(seen.slice(0, seen.length / 2)).toEqual(seen.slice(seen.length / 2))
    expect(harnesses[0]!.app.shield.fastPathAnswered()).toBeGreaterThan(0)
  })

  it('sends s-maxage without Surrogate-Control with Varnish alone, and neither without a purge target', async () => {
    const varnish = await startVarnishRecorder()
    fakes.push(varnish)
    const withVarnish = await startShield({ env: { CDN_PURGE_VARNISH: varnish.url } })
    const without = await startShield({ sharedOrigin: withVarnish.origin })
    harnesses.push(without, withVarnish)
    const a = await withVarnish.get('/api/v1/cms/pages/')
    expect(a.headers['cache-control']).toBe('public, max-age=30, s-maxage=3600, stale-while-revalidate=60, stale-if-error=86400')
    expect(a.headers['surrogate-control']).toBeUndefined()
    const b = await without.get('/api/v1/cms/pages/')
    expect(b.headers['cache-control']).toBe('public, max-age=30, stale-while-revalidate=60, stale-if-error=86400')
  })
})
