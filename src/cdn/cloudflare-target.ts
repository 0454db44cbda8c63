/**
 * Cloudflare: purge by cache tag (docs/cdn-purging.md#cloudflare). Cloudflare has no soft purge.
 * @module
 */
import { exchange, type PurgeHttp, type PurgeTarget } from './purge-target.js'

/** Cloudflare's limit of tags in one purge_cache call (docs/cdn-purging.md#cloudflare). */
export const CLOUDFLARE_MAX_TAGS = 100

export interface CloudflareTargetOptions {
  readonly apiUrl: string
  readonly zoneId: string
  readonly token: string
  readonly http: PurgeHttp
}

export function createCloudflareTarget(options: CloudflareTargetOptions): PurgeTarget {
  const url = `${options.apiUrl.replace(/\/+$/, '')}/zones/${encodeURIComponent(options.zoneId)}/purge_cache`
  const headers = { authorization: `Bearer ${options.token}`, 'content-type': 'application/json', accept: 'application/json' }
  return {
    name: 'cloudflare',
    where: `zone ${options.zoneId}`,
    maxKeys: CLOUDFLARE_MAX_TAGS,
    purge: (keys, signal) =>
      exchange(options.http, { url, method: 'POST', headers, body: JSON.stringify({ tags: keys }), refusalIn: envelopeRefusal }, signal),
  }
}

/**
 * The v4 envelope's verdict: `undefined` for `success: true`, else its errors in one line. A body
 * that is not the envelope at all is taken as a refusal too: nothing says the purge happened.
 */
export function envelopeRefusal(body: string): string | undefined {
  let envelope: unknown
  try {
    envelope = JSON.parse(body)
  } catch {
    return `not a Cloudflare API answer: ${body.slice(0, 200)}`
  }
  if (typeof envelope !== 'object' || envelope === null) return 'not a Cloudflare API answer'
  const { success, errors } = envelope as { success?: unknown; errors?: unknown }
  if (success === true) return undefined
  const listed = Array.isArray(errors)
    ? errors.map((e: unknown) => (typeof e === 'object' && e !== null ? `${String((e as { code?: unknown }).code ?? '?')} ${String((e as { message?: unknown }).message ?? '')}` : String(e)))
    : []
  return `success: false${listed.length > 0 ? ` (${listed.join('; ')})` : ''}`
}
