/**
 * A real Varnish with the shipped VCL (config/varnish/default.vcl) in front of the real app on a
 * real port, over the fake CMS: what Varnish caches, what a purge by surrogate key drops (and only
 * that), and who may purge. Whether Varnish answered from its cache is read from the `X-Cache`
 * header the VCL adds (HIT when the object had been served before).
 *
 * Skipped, with the reason printed, only where varnishd is missing outside CI.
 */
import { request } from 'undici'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { startShield, type Harness } from '../helpers/start-shield.js'
import { startVarnish, varnishMissing, type VarnishServer } from '../helpers/varnish-server.js'

const missing = varnishMissing()
if (missing !== undefined) console.warn(`skipping the Varnish suites: ${missing}`)

interface Answer {
  readonly status: number
  readonly body: string
  readonly cache: string | undefined
  readonly headers: Record<string, string | string[] | undefined>
}

async function get(base: string, path: string): Promise<Answer> {
  const response = await request(base + path)
  const body = await response.body.text()
  const cache = response.headers['x-cache']
  return { status: response.statusCode, body, cache: typeof cache === 'string' ? cache : undefined, headers: response.headers }
}

async function purge(varnish: VarnishServer, headers: Record<string, string>): Promise<{ status: number; purged: number; body: string }> {
  const response = await request(`${varnish.url}/`, { method: 'PURGE', headers })
  return { status: response.statusCode, purged: Number(response.headers['x-purged'] ?? NaN), body: await response.body.text() }
}

/** Polls (bounded) until `check` holds. */
async function eventually(check: () => Promise<boolean>, what: string, ms = 2000): Promise<void> {
  const started = Date.now()
  while (!(await check())) {
    if (Date.now() - started > ms) throw new Error(`${what}: not within ${ms} ms`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/** The app on a real port of 127.0.0.1 (Varnish talks HTTP to it) and its base URL. */
async function listen(harness: Harness): Promise<{ host: string; port: number; url: string }> {
  await harness.app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = harness.app.server.address() as { port: number }
  return { host: '127.0.0.1', port, url: `http://127.0.0.1:${port}` }
}

function leafId(harness: Harness): number {
  const snapshot = harness.app.shield.sync.current!
  return snapshot.pages.find((p) => p.parentId !== null && !snapshot.childrenOf.has(p.id) && p.type === 'cms.GenericPage')!.id
}

describe.skipIf(missing !== undefined)('the shipped VCL in front of cms-shield', () => {
  let h: Harness
  let shield: { host: string; port: number; url: string }
  let varnish: VarnishServer

  beforeAll(async () => {
    // Browsers' max-age is Varnish's TTL when no s-maxage is sent: an hour, so nothing expires here.
    h = await startShield({ env: { CLIENT_MAX_AGE: '1h' } })
    shield = await listen(h)
    varnish = await startVarnish({ backend: shield })
  })
  afterAll(async () => {
    await varnish?.stop()
    await h?.close()
  })

  it('caches the pages API with cms-shield\'s bytes and headers, and answers a repeat itself', async () => {
    const id = leafId(h)
    const direct = await get(shield.url, `/api/v1/cms/pages/${id}/`)
    const first = await get(varnish.url, `/api/v1/cms/pages/${id}/`)
    const second = await get(varnish.url, `/api/v1/cms/pages/${id}/`)
    expect([first.cache, second.cache]).toEqual(['MISS', 'HIT'])
    expect(second.body).toBe(direct.body)
    for (const name of ['etag', 'cache-control', 'vary', 'surrogate-key', 'cache-tag', 'content-type']) {
      expect(second.headers[name], name).toBe(direct.headers[name])
    }
    expect(second.headers.xkey).toBeUndefined()
    const revalidated = await request(`${varnish.url}/api/v1/cms/pages/${id}/`, { headers: { 'if-none-match': String(direct.headers.etag) } })
    await revalidated.body.dump()
    expect(revalidated.statusCode).toBe(304)
  })

  it('drops exactly the answers tagged with a purged key', async () => {
    const id = leafId(h)
    const parent = h.app.shield.sync.current!.byId.get(id)!.parentId!
    const tagged = [`/api/v1/cms/pages/${id}/`, `/api/v1/cms/pages/?child_of=${parent}`]
    const untagged = ['/api/v1/cms/pages/?limit=5', '/api/v1/cms/pages/?show_in_menus=true', `/api/v1/cms/pages/${parent}/`]
    for (const path of [...tagged, ...untagged]) await get(varnish.url, path)
    const purged = await purge(varnish, { 'xkey-purge': `cms-page-${id} cms-children-${parent} cms-page-no-such` })
    expect(purged).toMatchObject({ status: 200, purged: 2 })
    for (const path of tagged) expect((await get(varnish.url, path)).cache, path).toBe('MISS')
    for (const path of untagged) expect((await get(varnish.url, path)).cache, path).toBe('HIT')
  })

  it('serves a soft-purged answer once more while it fetches the new one', async () => {
    const id = leafId(h)
    const path = `/api/v1/cms/pages/${id}/`
    const before = await get(varnish.url, path)
    h.origin.updatePage(id, { title: 'Soft-purged title' })
    expect(await h.app.shield.sync.syncNow()).toMatchObject({ ok: true })
    const fresh = await get(shield.url, path)
    expect(fresh.body).toContain('Soft-purged title')
    expect((await get(varnish.url, path)).body).toBe(before.body)
    expect(await purge(varnish, { 'xkey-softpurge': `cms-page-${id}` })).toMatchObject({ status: 200, purged: 1 })
    // In grace (cms-shield's stale-while-revalidate): the old bytes at once, the fetch behind them.
    const stale = await get(varnish.url, path)
    expect(stale).toMatchObject({ cache: 'HIT', body: before.body })
    await eventually(async () => (await get(varnish.url, path)).body === fresh.body, 'the soft-purged answer refreshed')
  })

  it('refuses a PURGE without keys with 400 and passes OPTIONS to cms-shield', async () => {
    const refused = await purge(varnish, {})
    expect(refused.status).toBe(400)
    const options = await request(`${varnish.url}/api/v1/cms/pages/`, { method: 'OPTIONS' })
    const direct = await request(`${shield.url}/api/v1/cms/pages/`, { method: 'OPTIONS' })
    expect(options.statusCode).toBe(direct.statusCode)
    expect(await options.body.text()).toBe(await direct.body.text())
    expect(options.headers.allow).toBe(direct.headers.allow)
  })
})

describe.skipIf(missing !== undefined)('the purgers ACL', () => {
  let h: Harness | undefined
  let varnish: VarnishServer | undefined
  afterEach(async () => {
    await varnish?.stop()
    await h?.close()
  })

  it('answers 403 to a PURGE from outside it and keeps every answer', async () => {
    h = await startShield()
    const shield = await listen(h)
    // The shipped ACL with loopback taken out: the test's requests come from outside it.
    varnish = await startVarnish({ backend: shield, editVcl: (vcl) => vcl.replace(/^\s*"(127\.0\.0\.1|::1)";\n/gm, '') })
    const path = `/api/v1/cms/pages/${leafId(h)}/`
    await get(varnish.url, path)
    const refused = await purge(varnish, { 'xkey-purge': 'cms-pages' })
    expect(refused.status).toBe(403)
    expect((await get(varnish.url, path)).cache).toBe('HIT')
  })
})
