/**
 * `npm run verify`'s core over real HTTP: the fake Wagtail as the CMS and a cms-shield in front of
 * it, listening on 127.0.0.1. Every answer must be identical (or differ only as README documents);
 * and a "shield" that changes one key order or one header must be caught, so this test can fail.
 */
import { PARTNER_HOST as PARTNER, PARTNER_OFFSET as OFFSET, SAMPLE_MEDIA as MEDIA, partnerPages } from '../fake-wagtail/sample-layouts.js'
import { createServer, request as httpRequest, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { askedTheCms, fieldsOrderCost } from '../../scripts/verify/cms-requests.js'
import { formatReport, passed } from '../../scripts/verify/report.js'
import { runVerify, type VerifyRun } from '../../scripts/verify/run-verify.js'
import { generateSite, type FakePage } from '../fake-wagtail/index.js'
import { startShield, type Harness } from '../helpers/start-shield.js'

/** Fixed, so a run is reproducible; VERIFY_SEED and VERIFY_REQUESTS explore others. */
const SEED = Number(process.env['VERIFY_SEED'] ?? 1)
const REQUESTS = Number(process.env['VERIFY_REQUESTS'] ?? 300)

let h: Harness
let shieldUrl: string

beforeAll(async () => {
  // Load shedding is a deliberate 503 under pressure, not an answer to input: off for this run.
  h = await startShield({ env: { LOAD_SHED_EVENT_LOOP_DELAY: '0' } })
  await h.app.listen({ port: 0, host: '127.0.0.1' })
  shieldUrl = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`
})
afterAll(async () => {
  await h.close()
})

const verify = (shield: string, requests: number, seed = 1): Promise<VerifyRun> =>
  runVerify({ cms: h.origin.url, shield, requests, seed, rate: 2000, timeoutMs: 5000 })


describe('npm run verify against the fake Wagtail and cms-shield', () => {
  it('finds every answer identical, or different only where README documents it', async () => {
    const run = await verify(shieldUrl, REQUESTS, SEED)
    expect(run.results).toHaveLength(REQUESTS)
    expect(run.bases).toEqual({ cms: 'http://localhost', shield: 'https://shield.example' })
    expect(run.site.pages).toHaveLength(89)
    expect(run.site.limitMax).toBe(250)
    const unexpected = run.results.filter((result) => !['identical', 'documented'].includes(result.verdict.outcome))
    expect(unexpected.map((result) => `${result.request.method} ${result.request.target} ${result.verdict.notes.join('; ')}`)).toEqual([])
    expect(run.counts['over-budget']).toBe(0)
    expect(run.counts.identical).toBeGreaterThan(REQUESTS * 0.8)
    expect(formatReport(run).at(-1)).toBe(`verify: ${run.counts.identical + run.counts.documented}/${REQUESTS} identical`)
  })

  it('covers every view, method and Accept variant', async () => {
    const run = await verify(shieldUrl, 120, 7)
    const requests = run.results.map((result) => result.request)
    expect(new Set(requests.map((request) => request.view))).toEqual(new Set(['listing', 'detail', 'find']))
    expect(new Set(requests.map((request) => request.method))).toEqual(new Set(['GET', 'HEAD', 'OPTIONS']))
    expect(new Set(requests.map((request) => request.accept)).size).toBeGreaterThanOrEqual(6)
  })
})

/** The 89-page site with a German translation (i18n on) and a `date` on GenericPages, some shared. */
function datedBilingualSite(): FakePage[] {
  const english = generateSite({ timeZone: 'UTC' }).map((page, i) =>
    page.type === 'cms.GenericPage' ? { ...page, extra: { ...page.extra, date: `2020-01-${String(1 + (i % 40 > 27 ? i % 28 : i % 40)).padStart(2, '0')}` } } : page)
  const german = english.map((page): FakePage => ({
    ...page,
    id: page.id + 1_000,
    parentId: page.parentId === null ? null : page.parentId + 1_000,
    ...(page.aliasOf == null ? {} : { aliasOf: page.aliasOf + 1_000 }),
    slug: page.parentId === null ? `${page.slug}-de` : page.slug,
    title: `${page.title} (de)`,
    locale: 'de',
    translationKey: `page-${page.id}`,
  }))
  return [...english, ...german]
}

describe('npm run verify: fields and order, and what they cost the CMS', () => {
  it('finds fields in every form and order by id, publication and a type\'s own date identical, and asks the CMS only where the database decides', async () => {
    const dated = await startShield({ origin: { pages: datedBilingualSite(), i18n: true, locales: ['en', 'de'] }, env: { LOAD_SHED_EVENT_LOOP_DELAY: '0' } })
    await dated.app.listen({ port: 0, host: '127.0.0.1' })
    try {
      const run = await runVerify({ cms: dated.origin.url, shield: `http://127.0.0.1:${(dated.app.server.address() as AddressInfo).port}`, requests: 400, seed: 2, rate: 2000, timeoutMs: 5000 })
      expect(unexpected(run)).toEqual([])
      const cost = fieldsOrderCost(run.results)
      const kinds = [...cost.keys()]
      for (const form of ['order: first_published_at (ties)', 'order: first_published_at (distinct)', 'order: own date date (ties)', 'order: own date -date (distinct)', 'order: -id', 'fields: * · typed listing', 'fields: _,name · detail']) {
        expect(kinds, form).toContain(form)
      }
      // Shared or empty values, and sub-fields of a type's own object: the CMS's; everything else from the snapshot.
      const needsCms = /\((ties|empty)\)$|own name\(sub\)/
      expect([...cost].filter(([kind, each]) => each.asked > 0 && !needsCms.test(kind))).toEqual([])
      expect([...cost].filter(([kind]) => /\(ties\)$/.test(kind)).every(([, each]) => each.asked > 0)).toBe(true)
      const asked = run.results.filter((result) => askedTheCms(result.shield)).length
      // Every request a shield answer names as sent on is one the metrics count (which also count retries and answers without the header).
      expect(run.readThrough).toBeGreaterThanOrEqual(asked)
      expect(formatReport(run).join('\n')).toMatch(/verify: fields and order: \d+ of \d+ requests asked the CMS/)
    } finally {
      await dated.close()
    }
  })
})

type Mutate = (path: string, headers: Record<string, string | string[] | undefined>, body: string) => string

/**
 * A "shield" that relays to `upstream` and lets `mutate` change the answer, or refuses what
 * `refuse` picks with the shield's over-budget 429: what verify must catch.
 */
async function tamperingProxy(upstream: string, mutate: Mutate, refuse: (path: string) => boolean = () => false): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    const path = req.url ?? '/'
    if (refuse(path)) {
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '1' })
      res.end('{"message": "too many requests that only the CMS can answer; slow down"}')
      return
    }
    const headers = { ...req.headers }
    delete headers.host
    const out = httpRequest(`${upstream}${path}`, { method: req.method, headers }, (answer) => {
      const chunks: Buffer[] = []
      answer.on('data', (chunk: Buffer) => chunks.push(chunk))
      answer.on('end', () => {
        const kept = { ...answer.headers }
        const body = mutate(path, kept, Buffer.concat(chunks).toString('utf8'))
        for (const name of ['content-length', 'connection', 'keep-alive', 'transfer-encoding']) delete kept[name]
        res.writeHead(answer.statusCode ?? 502, kept)
        res.end(req.method === 'HEAD' ? undefined : body)
      })
    })
    out.on('error', () => res.destroy())
    out.end()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server }
}

describe('npm run verify catches a shield that differs', () => {
  const detail = /^\/api\/v1\/cms\/pages\/\d+\/(\?|$)/

  it('in one key order: a detail with `title` before `meta`', async () => {
    const proxy = await tamperingProxy(shieldUrl, (path, _headers, body) => {
      if (!detail.test(path) || !body.startsWith('{')) return body
      // Move the top-level "title" member to just after "id": same JSON value, another key order.
      const parsed = JSON.parse(body) as Record<string, unknown>
      if (!('title' in parsed) || !('meta' in parsed)) return body
      const { id, title, ...rest } = parsed
      return JSON.stringify({ id, title, ...rest }, null, 4)
    })
    try {
      const run = await verify(proxy.url, 80)
      expect(passed(run)).toBe(false)
      const caught = run.results.filter((result) => result.verdict.outcome === 'differ' && result.verdict.group === 'body $')
      expect(caught.length).toBeGreaterThan(0)
      expect(caught[0]!.verdict.notes[0]).toMatch(/^body \$: keys \[id, meta, title.*\] vs \[id, title, meta/)
      expect(formatReport(run).join('\n')).toContain('detail: body $')
    } finally {
      proxy.server.close()
    }
  })

  it('in one header: Content-Type with a charset on listings', async () => {
    const proxy = await tamperingProxy(shieldUrl, (path, headers, body) => {
      if (path.startsWith('/api/v1/cms/pages/?') && headers['content-type'] === 'application/json') headers['content-type'] = 'application/json; charset=utf-8'
      return body
    })
    try {
      const run = await verify(proxy.url, 80)
      expect(passed(run)).toBe(false)
      const caught = run.results.filter((result) => result.verdict.group === 'header content-type')
      expect(caught.length).toBeGreaterThan(0)
      expect(caught[0]!.verdict.notes[0]).toContain('content-type: cms "application/json", shield "application/json; charset=utf-8"')
    } finally {
      proxy.server.close()
    }
  })

  it('and counts a shield over its read-through budget apart', async () => {
    // Every search= is something only the CMS can answer: refused as an exhausted budget would.
    const proxy = await tamperingProxy(shieldUrl, (_path, _headers, body) => body, (path) => path.includes('search='))
    try {
      const run = await verify(proxy.url, 150)
      expect(run.counts['over-budget']).toBeGreaterThan(0)
      expect(passed(run)).toBe(false)
      expect(formatReport(run).join('\n')).toContain('READ_THROUGH_CLIENT_RATE')
    } finally {
      proxy.server.close()
    }
  })
})



/** A second Site's tree, ids apart from the default Site's. */

/** A shield at /api/v2/ with images and documents, in front of a fake with a second Site; SITES as given. */
async function startV2(env: Record<string, string> = {}): Promise<{ h: Harness; url: string }> {
  const v2 = await startShield({
    origin: { apiPath: '/api/v2/', media: MEDIA, sites: { [PARTNER]: partnerPages() } },
    env: { API_PATH: '/api/v2/', API_ENDPOINTS: 'images,documents', LOAD_SHED_EVENT_LOOP_DELAY: '0', ...env },
  })
  await v2.app.listen({ port: 0, host: '127.0.0.1' })
  return { h: v2, url: `http://127.0.0.1:${(v2.app.server.address() as AddressInfo).port}` }
}

const unexpected = (run: VerifyRun): string[] =>
  run.results.filter((result) => !['identical', 'documented'].includes(result.verdict.outcome))
    .map((result) => `${result.request.method} ${result.request.target} ${result.verdict.notes.join('; ')}`)

describe('npm run verify at another API path (--api-path), with images and documents (--endpoints) and a Host (--host)', () => {
  it('verifies the pages endpoint at /api/v2/ and the images and documents endpoints from their own ids and tags', async () => {
    const { h: v2, url } = await startV2()
    try {
      const run = await runVerify({ cms: v2.origin.url, shield: url, apiPath: '/api/v2/', endpoints: ['images', 'documents'], requests: 250, seed: 3, rate: 2000, timeoutMs: 5000 })
      expect(unexpected(run)).toEqual([])
      expect(run.paths).toEqual({ api: '/api/v2/', pages: '/api/v2/pages/' })
      expect(run.site.media?.map((endpoint) => [endpoint.name, endpoint.ids, endpoint.tags])).toEqual([['images', [1, 2, 5], ['night', 'sea']], ['documents', [1, 3], ['finance']]])
      const targets = run.results.map((result) => result.request.target)
      expect(targets.every((target) => target.startsWith('/api/v2/'))).toBe(true)
      for (const endpoint of ['images', 'documents']) {
        const ours = run.results.filter((result) => result.request.endpoint === endpoint)
        expect(new Set(ours.map((result) => result.request.view)), endpoint).toEqual(new Set(['listing', 'detail', 'find']))
        // Answers of every kind came back: lists, details, find's redirect, 400s and 404s.
        const statuses = new Set(ours.map((result) => (result.cms.ok ? result.cms.answer.status : 0)))
        for (const status of [200, 302, 400, 404]) expect(statuses, `${endpoint} ${status}`).toContain(status)
      }
      expect(targets).toContain('/api/v2/images/?tags=sea')
      expect(run.counts.identical).toBeGreaterThan(250 * 0.8)
    } finally {
      await v2.close()
    }
  })

  it("sends --host to both sides: the partner Site's tree is discovered and verified, and a shield without SITES is caught", async () => {
    const withSites = await startV2({ SITES: PARTNER })
    const without = await startV2()
    try {
      const options = { apiPath: '/api/v2/', endpoints: ['images', 'documents'], host: `${PARTNER}:8080`, requests: 150, seed: 5, rate: 2000, timeoutMs: 5000 }
      withSites.h.origin.resetHits()
      const run = await runVerify({ cms: withSites.h.origin.url, shield: withSites.url, ...options })
      expect(run.site.pages.every((page) => page.id > OFFSET), 'only the partner tree was discovered').toBe(true)
      expect(run.bases.cms).toBe(`http://${PARTNER}`)
      // Another Site's 500s get the default Site's 4xx, and its documents their own download_url: all identical.
      expect(unexpected(run)).toEqual([])
      // The verifier sent the Host with every request of its own (discovery included), and the shield asked
      // the CMS for that Site's pages as that Site.
      const seen = withSites.h.origin.requests
      const hostOf = (request: (typeof seen)[number]) => String(request.headers['host']).split(':')[0]
      const verifier = seen.filter((request) => request.headers['user-agent'] === 'cms-shield-verify')
      expect(verifier.length).toBeGreaterThan(150)
      expect(new Set(verifier.map(hostOf))).toEqual(new Set([PARTNER]))
      const shieldPages = seen.filter((request) => request.headers['user-agent'] !== 'cms-shield-verify' && request.url.startsWith('/api/v2/pages/'))
      expect(shieldPages.length).toBeGreaterThan(0)
      expect(new Set(shieldPages.map(hostOf))).toEqual(new Set([PARTNER]))

      const caught = await runVerify({ cms: without.h.origin.url, shield: without.url, ...options })
      expect(passed(caught)).toBe(false)
      expect(caught.results.some((result) => result.verdict.group === 'body $.meta.total_count')).toBe(true)
    } finally {
      await withSites.h.close()
      await without.h.close()
    }
  })
})
