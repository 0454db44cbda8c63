/**
 * A fake Wagtail origin over real HTTP (`node:http`, no framework) for integration tests, the demo and
 * benchmarks. It answers like Wagtail 7.4.3's pages API (see `pages-api.ts`), counts and records every
 * request, can be mutated while running, and can inject faults.
 * @module
 */
import { createServer } from 'node:http'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import { chargeFor } from './charge-answer.js'
import type { CostModel } from './cost-model.js'
import { writeAnswer, writeFault } from './faults.js'
import { answerCall, splitTarget } from './pages-api.js'
import type { ApiConfig } from './pages-api.js'
import { PageStore } from './page-store.js'
import { DEFAULT_API_PATH, decodePath, routePath } from './routes.js'
import { MEDIA_ENDPOINTS } from './media-api.js'
import type { SiteUrls } from './site-index.js'
import type {
  Fault, FaultContext, FakeWagtail, FakeWagtailOptions, HitCounters, RecordedRequest,
} from './types.js'

const DEFAULT_SITE_URL = 'http://localhost'

/** `get_base_url`: only scheme and netloc of WAGTAILAPI_BASE_URL count (docs/wagtail-compatibility.md#response-bodies). */
function schemeAndNetloc(url: string): string {
  const match = /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\/([^/?#]*)/.exec(url)
  if (!match) throw new Error(`fake-wagtail: not an absolute URL: ${url}`)
  return `${(match[1] as string).toLowerCase()}://${match[2] as string}`
}

export function siteUrlsFor(options: Pick<FakeWagtailOptions, 'siteUrl' | 'apiBaseUrl' | 'apiPath'>): SiteUrls {
  const siteUrl = (options.siteUrl ?? DEFAULT_SITE_URL).replace(/\/+$/, '')
  return { siteUrl, detailBase: options.apiBaseUrl ? schemeAndNetloc(options.apiBaseUrl) : siteUrl, apiPath: options.apiPath ?? DEFAULT_API_PATH }
}

/** The host to put in `url`: a wildcard address accepts loopback connections, and a client cannot dial it. */
function urlHost(host: string | undefined): string {
  if (host === undefined || host === '' || host === '0.0.0.0' || host === '::') return '127.0.0.1'
  return host.includes(':') ? `[${host}]` : host
}

function zeroHits(): HitCounters {
  return { total: 0, list: 0, detail: 0, find: 0, endpoint: 0, other: 0 }
}

export async function startFakeWagtail(options: FakeWagtailOptions): Promise<FakeWagtail> {
  const urls = siteUrlsFor(options)
  const store = new PageStore(options.pages, urls)
  let config: ApiConfig = {
    store,
    urls,
    version: options.version ?? '7.4',
    limitMax: options.limitMax === undefined ? 250 : options.limitMax,
    layout: { apiPath: urls.apiPath, endpoints: options.media ? MEDIA_ENDPOINTS : [] },
    i18n: options.i18n ?? false,
    locales: options.locales ?? [...new Set(['en', ...options.pages.map((page) => page.locale ?? 'en')])],
    ...(options.media ? { media: options.media } : {}),
    ...(options.columnless ? { columnless: new Set(options.columnless) } : {}),
    ...(options.language === undefined ? {} : { language: options.language }),
  }
  // Other Sites: their own store and URLs, the rest as the default Site's.
  const siteConfigs = new Map<string, ApiConfig>()
  for (const [hostname, sitePages] of Object.entries(options.sites ?? {})) {
    const siteUrls = { ...urls, siteUrl: `http://${hostname}`, detailBase: options.apiBaseUrl ? urls.detailBase : `http://${hostname}` }
    siteConfigs.set(hostname, { ...config, store: new PageStore(sitePages, siteUrls), urls: siteUrls })
  }
  /**
   * `Site.find_for_request`: the Host's hostname names a Site, or the default one answers; a
   * `?site=` naming another Site selects its pages, `detail_url`s staying on the request's Site.
   */
  const configFor = (host: string | undefined, url: string): ApiConfig => {
    const requested = siteConfigs.get((host ?? '').split(':')[0]!.toLowerCase()) ?? config
    const named = new URLSearchParams(splitTarget(url).queryString).getAll('site').pop()?.split(':')[0]
    const selected = named === undefined ? undefined : named === new URL(urls.siteUrl).hostname ? config : siteConfigs.get(named)
    if (selected === undefined || selected === requested) return requested
    return { ...selected, urls: { ...selected.urls, detailBase: requested.urls.detailBase } }
  }
  const record = options.recordRequests ?? true
  const hits = zeroHits()
  const requests: RecordedRequest[] = []
  const sockets = new Set<Socket>()
  const timers = new Set<NodeJS.Timeout>()
  let latencyMs = options.latencyMs ?? 0
  let cost: CostModel | undefined = options.cost
  let faultFn: ((req: FaultContext) => Fault | undefined) | undefined
  let requestHook: ((req: FaultContext) => void) | undefined
  let closed = false

  const timerRegistry = {
    setTimeout(fn: () => void, ms: number): void {
      const timer = setTimeout(() => {
        timers.delete(timer)
        fn()
      }, ms)
      timers.add(timer)
    },
  }
  const delay = (ms: number): Promise<void> => new Promise((resolve) => timerRegistry.setTimeout(resolve, ms))

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    // A client that goes away mid-answer (trickle, oversize) must not crash the fake.
    res.on('error', () => undefined)
    const arrived = performance.now()
    const method = req.method ?? 'GET'
    const url = req.url ?? '/'
    const { path, queryString } = splitTarget(url)
    const route = routePath(decodePath(path), config.layout)
    hits.total++
    hits[route.kind]++
    if (record) requests.push({ method, url, headers: { ...req.headers }, kind: route.kind })
    const id = route.idDigits === undefined ? undefined : Number(route.idDigits)
    const context: FaultContext = {
      method,
      path,
      query: new URLSearchParams(queryString),
      kind: route.kind,
      hitNumber: hits.total,
      ...(id !== undefined && Number.isSafeInteger(id) ? { id } : {}),
    }
    requestHook?.(context)
    const fault = faultFn?.(context)
    req.resume() // drain any request body; the API never reads it
    const call = { method, url, headers: req.headers }
    const real = () => answerCall(call, configFor(req.headers.host, url))
    if (fault) {
      if (latencyMs > 0) await delay(latencyMs)
      if (!closed) writeFault(req, res, fault, real, timerRegistry)
      return
    }
    // The latency is the CMS's answer time: the fake's own work on the answer (a search over the
    // site, a page of JSON) happens inside it, not after it, so a benchmark's "250 ms origin"
    // answers 250 ms after the request arrived rather than 250 ms plus this process's work.
    const answer = real()
    // The CMS's worker time, when it charges: a request waits for a free worker and holds it.
    if (cost) await chargeFor(cost, route.kind, answer)
    const remaining = latencyMs - (performance.now() - arrived)
    if (remaining >= 1) await delay(remaining)
    if (!closed) writeAnswer(res, answer, method === 'HEAD')
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      // A bug in the fake must be loud in tests, not a hung request.
      const body = `fake-wagtail internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`
      if (!res.headersSent) res.writeHead(599, { 'Content-Type': 'text/plain; charset=utf-8' })
      res.end(body)
    })
  })
  server.on('connection', (socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  server.on('clientError', (_error, socket) => socket.destroy())

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
      server.off('error', reject)
      resolve()
    })
  })
  const address = server.address()
  if (address === null || typeof address === 'string') throw new Error('fake-wagtail: no TCP address')

  return {
    url: `http://${urlHost(options.host)}:${address.port}`,
    hits,
    requests,
    resetHits() {
      Object.assign(hits, zeroHits())
      requests.length = 0
    },
    setLatency(ms) {
      latencyMs = ms
    },
    setCost(model) {
      cost = model
    },
    get cost() {
      return cost
    },
    setPages: (pages) => store.setPages(pages),
    updatePage: (pageId, patch) => store.updatePage(pageId, patch),
    addPage: (page, addOptions) => store.addPage(page, addOptions),
    removePage: (pageId) => store.removePage(pageId),
    movePage: (pageId, newParentId) => store.movePage(pageId, newParentId),
    pages: () => store.pages(),
    setMedia(media) {
      if (!options.media) throw new Error('fake-wagtail: started without the images and documents endpoints')
      config = { ...config, media }
      for (const [hostname, site] of siteConfigs) siteConfigs.set(hostname, { ...site, media })
    },
    updateSitePage(hostname, pageId, patch) {
      const site = siteConfigs.get(hostname)
      if (!site) throw new Error(`fake-wagtail: no Site ${hostname}`)
      site.store.updatePage(pageId, patch)
    },
    setFault(fn) {
      faultFn = fn
    },
    onRequest(fn) {
      requestHook = fn
    },
    close() {
      if (closed) return Promise.resolve()
      closed = true
      for (const timer of timers) clearTimeout(timer)
      timers.clear()
      return new Promise<void>((resolve) => {
        server.close(() => resolve())
        for (const socket of sockets) socket.destroy()
      })
    },
  }
}
