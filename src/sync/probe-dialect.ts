/**
 * Learns, from the CMS itself, the answers that differ between Wagtail versions and settings
 * (design.md, "Behave like the CMS you front"): its largest page size, whether it ignores
 * `type=`, and whether find keeps the query string. Three small requests, once per process.
 * @module
 */
import type { Dialect } from '../tree/snapshot.js'
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

export async function probeDialect(get: UpstreamGet, pagesPath: string, rootId: number, signal?: AbortSignal): Promise<Omit<Dialect, 'limitMax'>> {
  const [emptyTypeIgnored, findKeepsQuery] = await Promise.all([
    probeEmptyTypeIgnored(get, pagesPath, signal),
    probeFindKeepsQuery(get, pagesPath, rootId, signal),
  ])
  return { emptyTypeIgnored, findKeepsQuery }
}
