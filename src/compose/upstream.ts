/**
 * The upstream part: the HTTP clients to the CMS, the Wagtail client for read-throughs, and the
 * URL rewriter that points the CMS's `detail_url`s at cms-shield (`docs/architecture.md`).
 * @module
 */
import type { FastifyBaseLogger } from 'fastify'
import type { Dispatcher } from 'undici'
import type { Config } from '../config/load-config.js'
import { createUrlRewriter, type RewriteUrl } from '../json/rewrite-detail-urls.js'
import type { ShieldEvents, UpstreamKind } from '../observability/shield-events.js'
import type { UpstreamAnswer, UpstreamGet } from '../sync/upstream-port.js'
import { createHttpClient, type GetOptions } from '../upstream/http-client.js'
import { createWagtailClient, type WagtailClient } from '../upstream/wagtail-client.js'
import { mountOf, type ApiMount } from '../config/api-mount.js'

export interface UpstreamParts {
  /** The sync's port to the CMS (and the refreshes'). */
  readonly get: UpstreamGet
  /** The same port asking as one of the CMS's other Sites (`Host: <hostname>`, SITES). */
  getAs(site: string): UpstreamGet
  /** Client-caused requests, on a pool of their own. */
  readonly wagtail: WagtailClient
  readonly rewriteUrl: RewriteUrl
  close(): Promise<void>
}

export interface UpstreamOptions {
  readonly config: Config
  readonly dispatcher?: Dispatcher | undefined
  readonly logger: FastifyBaseLogger
  readonly events: ShieldEvents
  readonly now: () => number
  readonly random: () => number
}

export function composeUpstream(options: UpstreamOptions): UpstreamParts {
  const { config, events } = options
  const mount = mountOf(config)
  const kindOf = upstreamKinds(mount)
  // Two pools: the sync and refreshes never wait for a connection behind client-caused requests.
  const client = (trafficClass: 'sync' | 'read_through', connections: number) => createHttpClient({
    baseUrl: config.upstreamUrl,
    ...(options.dispatcher ? { dispatcher: options.dispatcher } : {}),
    connections,
    trafficClass,
    timeoutMs: config.upstreamTimeoutMs,
    retries: config.upstreamRetries,
    maxBodyBytes: config.upstreamMaxBodyBytes,
    logger: options.logger,
    random: options.random,
    now: options.now,
    onAttempt: (attempt) => {
      if (events.listens('upstream')) {
        events.emit('upstream', { kind: kindOf(attempt.path), trafficClass: attempt.trafficClass, status: attempt.status, durationMs: attempt.durationMs })
      }
    },
  })
  const http = client('sync', config.upstreamConnections)
  const readThroughHttp = client('read_through', config.readThroughConcurrency)
  const getAs = (site: string | undefined): UpstreamGet => async (pathAndQuery, signal, trafficClass) => {
    // Set one by one, not spread: a sync makes one of these per page of the tree.
    const options: GetOptions = {}
    if (signal) options.signal = signal
    if (trafficClass) options.trafficClass = trafficClass
    if (site !== undefined) options.host = site
    const response = await http.get(pathAndQuery, options)
    return new CmsAnswer(response.status, response.contentType, response.headers, response.body)
  }
  const get = getAs(undefined)
  return {
    get,
    getAs,
    wagtail: createWagtailClient({ http: readThroughHttp, mount }),
    rewriteUrl: createUrlRewriter({ baseUrl: config.baseUrl, upstreamPathPrefix: new URL(config.upstreamUrl).pathname, apiPath: mount.root }),
    async close() {
      await http.close()
      await readThroughHttp.close()
    },
  }
}

/**
 * One CMS answer as the sync reads it. The sync parses most bodies as bytes (`json-tape.ts`), so
 * the text is decoded on first read only; a class, not a closure over the client's response, so
 * that an answer holds its own four fields and nothing more.
 */
class CmsAnswer implements UpstreamAnswer {
  private decoded: string | undefined

  constructor(
    readonly status: number,
    readonly contentType: string,
    readonly headers: UpstreamAnswer['headers'],
    readonly bytes: Buffer,
  ) {}

  get text(): string {
    this.decoded ??= this.bytes.toString('utf8')
    return this.decoded
  }
}

/** The kind of CMS request, from its path: a bounded label for metrics (other endpoints' are `other`). */
export function upstreamKinds(mount: ApiMount): (path: string) => UpstreamKind {
  return (path) => {
    const at = path.indexOf(mount.pagesPath)
    if (at < 0) return 'other'
    return pagesViewOf(path.slice(at + mount.pagesPath.length).split('?')[0]!)
  }
}

function pagesViewOf(rest: string): UpstreamKind {
  if (rest === '') return 'list'
  if (rest === 'find/') return 'find'
  return /^[0-9]+\/$/.test(rest) ? 'detail' : 'other'
}
