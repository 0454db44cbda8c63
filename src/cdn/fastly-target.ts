/**
 * Fastly: one batch surrogate-key purge per request (docs/cdn-purging.md#fastly).
 * @module
 */
import { exchange, type PurgeHttp, type PurgeTarget } from './purge-target.js'

/** Fastly's limit of surrogate keys in one batch purge (docs/cdn-purging.md#fastly). */
export const FASTLY_MAX_KEYS = 256

export interface FastlyTargetOptions {
  readonly apiUrl: string
  readonly serviceId: string
  readonly token: string
  readonly soft: boolean
  readonly http: PurgeHttp
}

export function createFastlyTarget(options: FastlyTargetOptions): PurgeTarget {
  const url = `${options.apiUrl.replace(/\/+$/, '')}/service/${encodeURIComponent(options.serviceId)}/purge`
  const headers: Record<string, string> = {
    'fastly-key': options.token,
    'content-type': 'application/json',
    accept: 'application/json',
    ...(options.soft ? { 'fastly-soft-purge': '1' } : {}),
  }
  return {
    name: 'fastly',
    where: `service ${options.serviceId}`,
    maxKeys: FASTLY_MAX_KEYS,
    purge: (keys, signal) =>
      exchange(options.http, {
        url, method: 'POST', headers, body: JSON.stringify({ surrogate_keys: keys }),
        waitAskedBy: (answer) => rateLimitReset(answer['fastly-ratelimit-reset'], options.http.now),
      }, signal),
  }
}

/** `Fastly-RateLimit-Reset`: UTC epoch seconds when the window resets; ms from now. */
function rateLimitReset(value: string | string[] | undefined, now: () => number): number | undefined {
  const text = (Array.isArray(value) ? value[0] : value)?.trim()
  if (text === undefined || !/^\d+$/.test(text)) return undefined
  return Math.max(0, Number(text) * 1000 - now())
}
