/**
 * Learns, from the CMS itself, the answers that differ between Wagtail versions and settings
 * (docs/wagtail-compatibility.md#dialect-probes): its largest page size, whether it ignores
 * `type=`, whether find keeps the query string, what a NUL in a text filter does and the language
 * of DRF's 406. Five small requests, once per process.
 * @module
 */
import type { Dialect } from '../tree/snapshot.js'
import { NOT_ACCEPTABLE_TEXT } from '../query/wagtail-messages.js'
import { badStatusError, type UpstreamGet } from './upstream-port.js'

/** offset=limit=10^9 asks for nothing that exists: an empty page when there is no maximum. */
const PROBE = 1_000_000_000

export async function probeLimitMax(get: UpstreamGet, pagesPath: string, signal?: AbortSignal): Promise<number | null> {
  const answer = await get(`${pagesPath}?offset=${PROBE}&limit=${PROBE}`, signal)
  if (answer.status === 200) return null
  const match = /limit cannot be higher than (\d+)/.exec(answer.text)
  if (answer.status === 400 && match) return Number(match[1])
  throw badStatusError(answer, `the CMS answered ${answer.status} when asked for its page size`)
}

export async function probeEmptyTypeIgnored(get: UpstreamGet, pagesPath: string, signal?: AbortSignal): Promise<boolean> {
  const answer = await get(`${pagesPath}?type=&limit=0`, signal)
  if (answer.status === 200) return true
  if (answer.status === 400) return false
  throw badStatusError(answer, `the CMS answered ${answer.status} to type=`)
}

export async function probeFindKeepsQuery(get: UpstreamGet, pagesPath: string, pageId: number, signal?: AbortSignal): Promise<boolean> {
  const answer = await get(`${pagesPath}find/?id=${pageId}`, signal)
  const location = answer.headers['location']
  if (answer.status !== 302 || typeof location !== 'string') {
    throw badStatusError(answer, `the CMS answered ${answer.status} to find/?id=${pageId}`)
  }
  return location.includes('?')
}

/** `title=%00`: refused with a 400 (6.2+), an empty page (older, SQLite), or a 500 (older, PostgreSQL). */
export async function probeNulInTextFilter(get: UpstreamGet, pagesPath: string, signal?: AbortSignal): Promise<Dialect['nulInTextFilter']> {
  const answer = await get(`${pagesPath}?title=%00&limit=1`, signal)
  return answer.status === 200 ? 'matches-nothing' : 'refused'
}

/**
 * DRF's 406 text, in the language the CMS speaks: `format=api` keeps only the browsable
 * renderer (text/html), which the client's `Accept: application/json` does not take.
 */
export async function probeNotAcceptableText(get: UpstreamGet, pagesPath: string, signal?: AbortSignal): Promise<string> {
  const answer = await get(`${pagesPath}?format=api&limit=0`, signal)
  if (answer.status !== 406) return NOT_ACCEPTABLE_TEXT
  try {
    const detail = (JSON.parse(answer.text) as { detail?: unknown }).detail
    return typeof detail === 'string' && detail !== '' ? detail : NOT_ACCEPTABLE_TEXT
  } catch {
    return NOT_ACCEPTABLE_TEXT
  }
}

export async function probeDialect(get: UpstreamGet, pagesPath: string, rootId: number, signal?: AbortSignal): Promise<Omit<Dialect, 'limitMax'>> {
  const [emptyTypeIgnored, findKeepsQuery, nulInTextFilter, notAcceptableText] = await Promise.all([
    probeEmptyTypeIgnored(get, pagesPath, signal),
    probeFindKeepsQuery(get, pagesPath, rootId, signal),
    probeNulInTextFilter(get, pagesPath, signal),
    probeNotAcceptableText(get, pagesPath, signal),
  ])
  return { emptyTypeIgnored, findKeepsQuery, nulInTextFilter, notAcceptableText }
}
