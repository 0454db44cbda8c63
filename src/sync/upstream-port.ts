/**
 * What the sync and the read-through need from the CMS client: one GET. Keeping the port this
 * small lets tests drive both with anything that answers (the fake origin, a stub).
 * @module
 */
import { createError, type ProxyError } from '../errors.js'

export interface UpstreamAnswer {
  readonly status: number
  /** The response's Content-Type, lower-cased ('' when absent). */
  readonly contentType: string
  readonly headers: Readonly<Record<string, string | string[] | undefined>>
  readonly text: string
  /**
   * The body's raw bytes, when the client has them: a listing window's digest is taken over these,
   * not over `text` (which the hash would encode back into UTF-8 first).
   */
  readonly bytes?: Buffer
}

/**
 * The error for a CMS answer the sync cannot use because of its status. The `Retry-After` a CMS
 * (or the gateway in front of it) sent with a 429 or 503 goes along, so that the sync's next
 * attempt waits as long as it asked (RFC 9110 §10.2.3, RFC 6585 §4).
 */
export function badStatusError(answer: UpstreamAnswer, message: string): ProxyError {
  const retryAfter = answer.headers['retry-after']
  return createError('UPSTREAM_BAD_STATUS', message, {
    details: { status: answer.status, ...(retryAfter === undefined ? {} : { retryAfter }) },
  })
}

/**
 * @param trafficClass `refresh` while a PURGE or webhook is being served, `sync` otherwise (for
 * metrics: `cms_requests_total{class}`); both share the sync's connection pool.
 */
export type UpstreamGet = (pathAndQuery: string, signal?: AbortSignal, trafficClass?: 'sync' | 'refresh') => Promise<UpstreamAnswer>

export function isJson(answer: UpstreamAnswer): boolean {
  const type = answer.contentType.split(';')[0]!.trim().toLowerCase()
  return type === 'application/json' || type.endsWith('+json')
}
