/**
 * What every purge target is to the delivery queue (`purge-delivery.ts`): a name, a per-request
 * key limit and one `purge(keys)` that never rejects but says whether to retry; and the one HTTP
 * exchange the three targets share (send, read a bounded body, classify the status).
 * @module
 */
import { request, type Dispatcher } from 'undici'
import { parseRetryAfter } from '../upstream/retry-policy.js'

export type TargetName = 'varnish' | 'fastly' | 'cloudflare'

/** How one purge request ended: acknowledged, worth another attempt, or refused for good. */
export type PurgeAnswer =
  | { readonly kind: 'ok' }
  | { readonly kind: 'retry'; readonly reason: string; readonly retryAfterMs?: number }
  | { readonly kind: 'fail'; readonly reason: string }

export interface PurgeTarget {
  readonly name: TargetName
  /** Where it purges, for logs (a Varnish URL, a Fastly service, a Cloudflare zone); never a secret. */
  readonly where: string
  /** Most keys one request may carry (docs/cdn-purging.md). */
  readonly maxKeys: number
  /** Sends one request for `keys` (at most `maxKeys`). Never rejects. */
  purge(keys: readonly string[], signal: AbortSignal): Promise<PurgeAnswer>
}

/** What the targets need to reach the network; tests point the dispatcher at loopback fakes. */
export interface PurgeHttp {
  readonly dispatcher?: Dispatcher
  /** Deadline of one request, headers and body. */
  readonly timeoutMs: number
  readonly now: () => number
}

export interface PurgeExchange {
  readonly url: string
  readonly method: 'POST' | 'PURGE'
  readonly headers: Record<string, string>
  readonly body?: string
  /**
   * A 2xx may still be a refusal (Cloudflare's `success: false`): given the body, the reason, or
   * `undefined` when it is an acknowledgement.
   */
  readonly refusalIn?: (body: string) => string | undefined
  /** A wait the answer asks for besides `Retry-After` (Fastly's rate-limit reset), in ms from now. */
  readonly waitAskedBy?: (headers: Readonly<Record<string, string | string[] | undefined>>) => number | undefined
}

/** Enough of an error body to log its reason; a purge answer is never large. */
const BODY_LIMIT = 16 * 1024

/**
 * Sends one purge and classifies its answer: 2xx is ok (unless `refusalIn` finds a refusal), 429,
 * 5xx and network errors are worth a retry (with the wait the answer asks for), any other status
 * is a refusal that retrying cannot fix.
 */
export async function exchange(http: PurgeHttp, purge: PurgeExchange, signal: AbortSignal): Promise<PurgeAnswer> {
  let status: number
  let headers: Readonly<Record<string, string | string[] | undefined>>
  let body: string
  try {
    const response = await request(purge.url, {
      method: purge.method,
      headers: purge.headers,
      ...(purge.body === undefined ? {} : { body: purge.body }),
      signal,
      headersTimeout: http.timeoutMs,
      bodyTimeout: http.timeoutMs,
      ...(http.dispatcher ? { dispatcher: http.dispatcher } : {}),
    })
    status = response.statusCode
    headers = response.headers
    body = await boundedText(response.body)
  } catch (error) {
    return { kind: 'retry', reason: error instanceof Error ? `${error.name}: ${error.message}` : String(error) }
  }
  if (status >= 200 && status < 300) {
    const refusal = purge.refusalIn?.(body)
    return refusal === undefined ? { kind: 'ok' } : { kind: 'fail', reason: `${status}: ${refusal}` }
  }
  const reason = `${status}${body.trim() === '' ? '' : `: ${body.trim().slice(0, 500)}`}`
  if (status === 429 || status >= 500) {
    const asked = parseRetryAfter(headers['retry-after'], http.now) ?? purge.waitAskedBy?.(headers)
    return asked === undefined ? { kind: 'retry', reason } : { kind: 'retry', reason, retryAfterMs: asked }
  }
  return { kind: 'fail', reason }
}

async function boundedText(body: AsyncIterable<Buffer> & { destroy(): unknown }): Promise<string> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of body) {
    chunks.push(chunk)
    size += chunk.length
    if (size >= BODY_LIMIT) {
      body.destroy()
      break
    }
  }
  return Buffer.concat(chunks).subarray(0, BODY_LIMIT).toString('utf8')
}
