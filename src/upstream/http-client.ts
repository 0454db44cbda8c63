/**
 * The one way cms-shield talks HTTP to the CMS: GET only, over an undici Pool, with a deadline
 * per attempt, a body cap, retries with jittered backoff, and errors from the catalogue.
 *
 * Nothing from a client request ever reaches the CMS through here: the only request headers are
 * `accept`, `user-agent` and, to ask as one of the CMS's Sites, a `host` from the configuration
 * (SITES), never a client's. Wagtail varies answers by session and Basic auth (docs/wagtail-compatibility.md#headers), so a
 * forwarded Cookie or Authorization would put one user's view into everyone's cache.
 * @module
 */

import { EventEmitter } from 'node:events'
import { setTimeout as delay } from 'node:timers/promises'
import { Pool, type Dispatcher } from 'undici'
import { createError, isProxyError } from '../errors.js'
import { backoffDelay, isRetryableError, statusRetryDelay } from './retry-policy.js'
import type { LogSink } from '../observability/log-sink.js'
import type { TrafficClass } from '../observability/shield-events.js'

export type ResponseHeaders = Record<string, string | string[] | undefined>

export interface UpstreamResponse {
  readonly status: number
  readonly headers: ResponseHeaders
  /** Media type only, lower-cased, without parameters (`application/json`); `''` when absent. */
  readonly contentType: string
  readonly body: Buffer
  /** The body decoded as UTF-8 (decoded once, on first call). */
  text(): string
}

export interface GetOptions {
  /** Aborting stops at once, retries and backoff included; the promise rejects with `signal.reason`. */
  signal?: AbortSignal
  /** Defaults to `application/json`. */
  accept?: string
  /** The `Host` the CMS sees, which selects its Site (docs/wagtail-compatibility.md#sites); default the base URL's. */
  host?: string
  /** Who caused the request, for the attempt report; defaults to the client's `trafficClass`. */
  trafficClass?: TrafficClass
}

export type HttpLogger = Pick<LogSink, 'debug' | 'warn'>

export interface HttpClientOptions {
  /** CMS base URL (origin plus optional path prefix); request paths are appended to it. */
  baseUrl: string
  /** Injected transport (tests: MockAgent); without it the client creates and owns a Pool. */
  dispatcher?: Dispatcher
  connections: number
  /** Deadline of one attempt, from sending the request to the last body byte. */
  timeoutMs: number
  /** Extra attempts after the first (0 = never retry). */
  retries: number
  maxBodyBytes: number
  logger?: HttpLogger
  random?: () => number
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>
  /** Clock for HTTP-date `Retry-After` values. */
  now?: () => number
  userAgent?: string
  /** What this client's requests are, unless a request says otherwise (each class has its own client and Pool). */
  trafficClass?: TrafficClass
  /** Called after every attempt (retries count separately), for metrics: the path, and the status or why there is none. */
  onAttempt?: (attempt: AttemptReport) => void
}

export interface AttemptReport {
  /** The request path (prefix included) and query. */
  readonly path: string
  readonly trafficClass: TrafficClass
  readonly status: number | 'error' | 'timeout'
  readonly durationMs: number
}

export interface HttpClient {
  /** The base URL requests go to, without trailing slash. */
  readonly baseUrl: string
  /**
   * GETs `pathAndQuery` (starting with `/`, appended to the base URL's path). Returns every
   * status as a response, redirects included (they are not followed); throws UPSTREAM_TIMEOUT,
   * UPSTREAM_UNAVAILABLE or UPSTREAM_BODY_TOO_LARGE when there is no complete response.
   */
  get(pathAndQuery: string, options?: GetOptions): Promise<UpstreamResponse>
  /** Closes the Pool if this client created it; an injected dispatcher belongs to its owner. */
  close(): Promise<void>
}

// A function, not an inline test: TypeScript would keep `signal.aborted` narrowed across awaits.
const DEFAULT_ACCEPT = 'application/json'
const isAborted = (signal: AbortSignal | undefined): boolean => signal?.aborted === true
const silentLogger: HttpLogger = { debug() {}, warn() {} }
const defaultSleep = (ms: number, signal?: AbortSignal): Promise<void> => delay(ms, undefined, { signal })

/** undici errors that are our bugs (a bad path or option), not the CMS's state: never retried. */
const PROGRAMMING_ERRORS: ReadonlySet<string> = new Set(['UND_ERR_INVALID_ARG', 'UND_ERR_NOT_SUPPORTED'])
const TIMEOUT_ERRORS: ReadonlySet<string> = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT'])

type Attempt = { kind: 'response'; response: UpstreamResponse } | { kind: 'retry'; delayMs: number; status: number }

/**
 * @example
 * const http = createHttpClient({ baseUrl: config.upstreamUrl, connections: 16, timeoutMs: 10_000, retries: 2, maxBodyBytes: 64 << 20 })
 * const response = await http.get('/api/v1/cms/pages/?limit=250')
 */
export function createHttpClient(options: HttpClientOptions): HttpClient {
  const base = new URL(options.baseUrl)
  const baseUrl = options.baseUrl.replace(/\/+$/, '')
  const prefix = base.pathname.replace(/\/+$/, '')
  const { timeoutMs, retries, maxBodyBytes } = options
  const logger = options.logger ?? silentLogger
  const random = options.random ?? Math.random
  const sleep = options.sleep ?? defaultSleep
  const now = options.now ?? Date.now
  const userAgent = options.userAgent ?? 'cms-shield'
  const ownsDispatcher = options.dispatcher === undefined
  // Read once: URL's `origin` getter builds a new string on every call (once per CMS request).
  const origin = base.origin
  const dispatcher = options.dispatcher ?? new Pool(origin, {
    connections: options.connections,
    // No pipelining: one slow detail must not hold the answers queued behind it.
    pipelining: 1,
    connectTimeout: timeoutMs,
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
  })
  let closing: Promise<void> | undefined
  // The headers of nearly every request, made once.
  const defaultHeaders: Readonly<Record<string, string>> = Object.freeze({ accept: DEFAULT_ACCEPT, 'user-agent': userAgent })

  async function attemptOnce(path: string, headers: Readonly<Record<string, string>>, signal: AbortSignal | undefined, retryIndex: number | undefined, trafficClass: TrafficClass): Promise<Attempt> {
    if (!options.onAttempt) return attemptUnreported(path, headers, signal, retryIndex)
    const started = performance.now()
    const report = options.onAttempt
    try {
      const outcome = await attemptUnreported(path, headers, signal, retryIndex)
      report({ path, trafficClass, status: outcome.kind === 'response' ? outcome.response.status : outcome.status, durationMs: performance.now() - started })
      return outcome
    } catch (error) {
      if (!isAborted(signal)) report({ path, trafficClass, status: isProxyError(error, 'UPSTREAM_TIMEOUT') ? 'timeout' : 'error', durationMs: performance.now() - started })
      throw error
    }
  }

  async function attemptUnreported(path: string, requestHeaders: Readonly<Record<string, string>>, signal: AbortSignal | undefined, retryIndex: number | undefined): Promise<Attempt> {
    // undici's headersTimeout/bodyTimeout measure idle gaps, not the whole transfer; a CMS that
    // trickles a byte a second would never trip them. This controller is the real deadline.
    // An EventEmitter, not an AbortController: undici takes either, and at 100,000 detail fetches
    // a sync the controller, its signal and their listener maps were a large share of what a full
    // sync left in the old generation (docs/performance.md, "Memory at 100,000 pages"). Only the
    // two causes below ever abort, and the catch tells them apart by their own flags.
    const abort = new EventEmitter()
    let timedOut = false
    const timer = setTimeout(() => {
      timedOut = true
      abort.emit('abort')
    }, timeoutMs)
    const forwardAbort = (): void => {
      abort.emit('abort')
    }
    signal?.addEventListener('abort', forwardAbort, { once: true })
    try {
      const response = await dispatcher.request({
        origin,
        path,
        method: 'GET',
        headers: requestHeaders,
        signal: abort,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      })
      const { statusCode: status, headers } = response
      const delayMs = retryIndex === undefined ? undefined : statusRetryDelay(status, headers['retry-after'], retryIndex, random, now)
      if (delayMs !== undefined) {
        // Drain a little so the connection can be reused; a big error page just gets the socket closed.
        await response.body.dump({ limit: 64 * 1024 })
        return { kind: 'retry', delayMs, status }
      }
      const body = await readCapped(response, maxBodyBytes, path)
      return { kind: 'response', response: toUpstreamResponse(status, headers, body) }
    } catch (error) {
      if (isAborted(signal)) throw signal?.reason
      if (timedOut) {
        throw createError('UPSTREAM_TIMEOUT', `GET ${path}: no complete answer within ${timeoutMs}ms`, { cause: error, details: { path } })
      }
      throw classify(error, path)
    } finally {
      clearTimeout(timer)
      signal?.removeEventListener('abort', forwardAbort)
    }
  }

  async function get(pathAndQuery: string, getOptions: GetOptions = {}): Promise<UpstreamResponse> {
    if (!pathAndQuery.startsWith('/')) throw new TypeError(`upstream path must start with "/", got ${JSON.stringify(pathAndQuery)}`)
    const path = prefix + pathAndQuery
    const { signal, accept = DEFAULT_ACCEPT, host, trafficClass = options.trafficClass ?? 'sync' } = getOptions
    const headers: Readonly<Record<string, string>> = host === undefined ? (accept === DEFAULT_ACCEPT ? defaultHeaders : { accept, 'user-agent': userAgent }) : { accept, 'user-agent': userAgent, host }
    for (let attempt = 0; ; attempt++) {
      if (isAborted(signal)) throw signal?.reason
      const retryIndex = attempt < retries ? attempt : undefined
      let delayMs: number
      let reason: unknown
      try {
        const outcome = await attemptOnce(path, headers, signal, retryIndex, trafficClass)
        if (outcome.kind === 'response') return outcome.response
        delayMs = outcome.delayMs
        reason = outcome.status
      } catch (error) {
        const retryable = isRetryableError(error)
        if (isAborted(signal) || !retryable || retryIndex === undefined) {
          if (retryable && attempt > 0) logger.warn({ path, attempts: attempt + 1, err: error }, 'CMS request failed after retries')
          throw error
        }
        delayMs = backoffDelay(retryIndex, random)
        reason = isProxyError(error) ? error.code : 'error'
      }
      logger.debug({ path, attempt: attempt + 1, delayMs, reason }, 'retrying CMS request')
      try {
        await sleep(delayMs, signal)
      } catch (error) {
        if (isAborted(signal)) throw signal?.reason
        throw error
      }
    }
  }

  return {
    baseUrl,
    get,
    close() {
      if (!ownsDispatcher) return Promise.resolve()
      closing ??= dispatcher.close()
      return closing
    },
  }
}

/** Reads the body, refusing more than `maxBytes`: by Content-Length first, then by counting. */
async function readCapped(response: Dispatcher.ResponseData, maxBytes: number, path: string): Promise<Buffer> {
  const tooLarge = (): Error =>
    createError('UPSTREAM_BODY_TOO_LARGE', `GET ${path}: body exceeds ${maxBytes} bytes`, { details: { path, maxBytes } })
  const declared = Number(response.headers['content-length'])
  if (Number.isFinite(declared) && declared > maxBytes) {
    response.body.destroy()
    throw tooLarge()
  }
  // Plain 'data' events, not `for await`: an async iterator costs promises and objects per chunk,
  // and a sync reads a body for every page of the tree.
  const body = response.body
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    body.on('data', (chunk: Buffer) => {
      size += chunk.length
      if (size > maxBytes) {
        // Destroying the stream aborts the transfer (and drops the socket) instead of downloading the rest.
        body.destroy()
        reject(tooLarge())
        return
      }
      chunks.push(chunk)
    })
    body.once('end', () => resolve(Buffer.concat(chunks, size)))
    body.once('error', reject)
  })
}

function toUpstreamResponse(status: number, headers: ResponseHeaders, body: Buffer): UpstreamResponse {
  const contentType = String(headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? ''
  let text: string | undefined
  return { status, headers, contentType, body, text: () => (text ??= body.toString('utf8')) }
}

function classify(error: unknown, path: string): unknown {
  if (isProxyError(error)) return error
  const code = (error as { code?: unknown } | null)?.code
  if (typeof code === 'string' && PROGRAMMING_ERRORS.has(code)) return error
  const message = error instanceof Error ? error.message : String(error)
  if (typeof code === 'string' && TIMEOUT_ERRORS.has(code)) {
    return createError('UPSTREAM_TIMEOUT', `GET ${path}: ${message}`, { cause: error, details: { path } })
  }
  // Refused, reset, DNS, TLS, socket closed mid-body: the CMS is not reachable right now.
  return createError('UPSTREAM_UNAVAILABLE', `GET ${path}: ${message}`, { cause: error, details: { path } })
}

