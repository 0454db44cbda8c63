/**
 * The verifier's core, without the command line: discover the CMS, build the corpus, send every
 * request to both sides at the operator's rate, and compare. The CLI and the tests call this.
 * @module
 */
import { shieldReadThrough } from './cms-requests.js'
import { compareExchanges } from './compare-answers.js'
import { apiPaths, buildCorpus } from './corpus.js'
import { detailBase, discoverSite } from './discover-site.js'
import { endpoint, type Endpoint } from './http-exchange.js'
import { pacer } from './pacer.js'
import type { ApiPaths, Bases, Exchange, Outcome, Result, SiteModel, VerifyRequest } from './types.js'

export interface VerifyOptions {
  /** The CMS's base URL (as cms-shield's UPSTREAM_URL): its pages API is `<cms><apiPath><pagesEndpoint>/`. */
  readonly cms: string
  /** Where the CMS mounts its API router, as cms-shield's API_PATH (default `/api/v1/cms/`). */
  readonly apiPath?: string
  /** The pages endpoint's name, as PAGES_ENDPOINT (default `pages`). */
  readonly pagesEndpoint?: string
  /** The router's other endpoints to verify too, as API_ENDPOINTS (`images`, `documents`). */
  readonly endpoints?: readonly string[]
  /** A `Host` header sent with every request to both sides: which of the CMS's Sites answers. */
  readonly host?: string
  readonly shield: string
  /** The base of the shield's detail_urls (its BASE_URL); learned from its own answers when absent. */
  readonly shieldBase?: string
  readonly requests: number
  readonly seed: number
  /** Requests per second to each side (discovery's included, on the CMS). */
  readonly rate: number
  readonly timeoutMs: number
  readonly log?: (line: string) => void
  /** How often progress is logged at least (default 2 s); also at every 5 %. */
  readonly progressEveryMs?: number
}

export interface VerifyRun {
  readonly paths: ApiPaths
  readonly host?: string
  readonly bases: Bases
  readonly site: SiteModel
  readonly discoveryRequests: number
  readonly results: readonly Result[]
  readonly counts: Readonly<Record<Outcome, number>>
  /** Read-through requests the shield made while the corpus ran (its `/metrics`); absent when it cannot say. */
  readonly readThrough?: number
}

const USER_AGENT = 'cms-shield-verify'

/** What every request carries: the user agent, and the `--host` when given (to both sides alike). */
function baseHeaders(host: string | undefined): Record<string, string> {
  return host === undefined ? { 'user-agent': USER_AGENT } : { 'user-agent': USER_AGENT, host }
}

function headersFor(request: VerifyRequest, host: string | undefined): Record<string, string> {
  return request.accept === undefined ? baseHeaders(host) : { ...baseHeaders(host), accept: request.accept }
}

/** The shield's detail_url base, from its own detail of a page the CMS listed (asked with the same Host). */
async function learnShieldBase(shield: Endpoint, id: number, paths: ApiPaths, host: string | undefined, paced: <T>(work: () => Promise<T>) => Promise<T>): Promise<string | undefined> {
  const exchange = await paced(() => shield.send('GET', `${paths.pages}${id}/`, baseHeaders(host)))
  if (!exchange.ok || exchange.answer.status !== 200) return undefined
  try {
    const body = JSON.parse(exchange.answer.body.toString('utf8')) as { meta?: { detail_url?: unknown } }
    return typeof body.meta?.detail_url === 'string' ? detailBase(body.meta.detail_url, id, paths.pages) : undefined
  } catch {
    return undefined
  }
}

export function emptyCounts(): Record<Outcome, number> {
  return { identical: 0, documented: 0, differ: 0, 'over-budget': 0, failed: 0 }
}

export async function runVerify(options: VerifyOptions): Promise<VerifyRun> {
  const log = options.log ?? (() => undefined)
  const paths = apiPaths(options.apiPath, options.pagesEndpoint)
  // A slow side must not let requests pile up: at most a second's worth (and at least 2) in flight.
  const inFlight = Math.max(2, Math.min(64, Math.ceil(options.rate)))
  const cms = endpoint(options.cms, options.timeoutMs, inFlight)
  const shield = endpoint(options.shield, options.timeoutMs, inFlight)
  const slots = pacer(options.rate, inFlight)
  const paced = async <T>(work: () => Promise<T>): Promise<T> => {
    await slots.acquire()
    try {
      return await work()
    } finally {
      slots.release()
    }
  }
  const host = options.host
  try {
    const discovery = await discoverSite((target) => paced(() => cms.send('GET', target, baseHeaders(host))), log, {
      paths,
      ...(options.endpoints === undefined ? {} : { endpoints: options.endpoints }),
    })
    const firstId = discovery.site.pages[0]!.id
    const shieldBase = options.shieldBase?.replace(/\/+$/, '') ?? (await learnShieldBase(shield, firstId, paths, host, paced)) ?? shield.base
    const bases: Bases = { cms: discovery.detailBase, shield: shieldBase }
    log(`verify: detail_url base ${bases.cms} (CMS${host === undefined ? '' : `, Host ${host}`}) is compared as ${bases.shield} (shield)`)

    const corpus = buildCorpus(discovery.site, options.seed, options.requests, paths)
    const counts = emptyCounts()
    const results: Result[] = new Array(corpus.length)
    let done = 0
    let lastLog = performance.now()
    let lastStep = 0
    const every = options.progressEveryMs ?? 2000
    const progress = (): void => {
      const step = Math.floor((done * 20) / corpus.length)
      if (done === corpus.length || step > lastStep || performance.now() - lastLog >= every) {
        lastStep = step
        lastLog = performance.now()
        const notSame = counts.differ + counts.failed + counts['over-budget']
        log(`verify: ${done}/${corpus.length} sent, ${notSame} differ${counts['over-budget'] > 0 ? ` (${counts['over-budget']} over the shield's budget)` : ''}`)
      }
    }
    const one = async (request: VerifyRequest): Promise<void> => {
      const headers = headersFor(request, host)
      const [theirs, ours]: [Exchange, Exchange] = await Promise.all([
        cms.send(request.method, request.target, headers),
        shield.send(request.method, request.target, headers),
      ])
      const verdict = compareExchanges(request, theirs, ours, bases)
      results[request.n] = { request, verdict, cms: theirs, shield: ours }
      counts[verdict.outcome]++
      done++
      progress()
    }
    const before = await shieldReadThrough(shield, baseHeaders(undefined))
    const running: Promise<void>[] = []
    for (const request of corpus) {
      await slots.acquire()
      running.push(one(request).finally(() => slots.release()))
    }
    await Promise.all(running)
    const after = before === undefined ? undefined : await shieldReadThrough(shield, baseHeaders(undefined))
    const readThrough = after === undefined || before === undefined ? undefined : after - before
    return { paths, ...(host === undefined ? {} : { host }), bases, site: discovery.site, discoveryRequests: discovery.requests, results, counts, ...(readThrough === undefined ? {} : { readThrough }) }
  } finally {
    cms.close()
    shield.close()
  }
}
