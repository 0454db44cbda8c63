/**
 * Turns a CMS answer to a read-through query into what the proxy replays: JSON bodies with their
 * `detail_url`s pointing at BASE_URL, find's 302 with its Location rewritten. Only the CMS's
 * deterministic answers (200, 302, 400, 404) are replayed; anything else is an upstream failure.
 * @module
 */
import { createError } from '../errors.js'
import { rewriteDetailUrls, type RewriteUrl } from '../json/rewrite-detail-urls.js'
import type { StoredAnswer } from './read-through.js'
import type { UpstreamResponse } from '../upstream/http-client.js'

const REPLAYED = new Set([200, 400, 404])

export function toStoredAnswer(response: UpstreamResponse, rewriteUrl: RewriteUrl, storedAt: number, where: string): StoredAnswer {
  // A Set-Cookie answer belongs to one client (docs/wagtail-compatibility.md#headers): replay it to that one only.
  const cacheable = response.headers['set-cookie'] === undefined
  if (response.status === 302) {
    const location = response.headers['location']
    if (typeof location !== 'string') throw createError('UPSTREAM_BAD_RESPONSE', `${where}: 302 without Location`)
    // Wagtail's only 302 is find's, to a pages API URL (docs/wagtail-compatibility.md#find-view). One to anywhere else (a login
    // page of a proxy in front of the CMS) is not the CMS's answer, and would hand its address on.
    const rewritten = rewriteUrl(location)
    if (rewritten === undefined) throw createError('UPSTREAM_BAD_RESPONSE', `${where}: 302 to a URL outside the pages API`)
    return {
      status: 302,
      contentType: 'text/html; charset=utf-8',
      location: rewritten,
      body: Buffer.alloc(0),
      storedAt,
      cacheable,
    }
  }
  if (!REPLAYED.has(response.status)) {
    throw createError('UPSTREAM_BAD_STATUS', `${where}: the CMS answered ${response.status}`, {
      details: { status: response.status },
    })
  }
  if (response.contentType !== 'application/json') {
    throw createError('UPSTREAM_BAD_RESPONSE', `${where}: content type ${response.contentType || '(none)'}`)
  }
  let text: string
  try {
    text = rewriteDetailUrls(response.text(), rewriteUrl).text
  } catch (error) {
    throw createError('UPSTREAM_BAD_RESPONSE', `${where}: malformed JSON`, { cause: error })
  }
  return { status: response.status, contentType: 'application/json', body: Buffer.from(text, 'utf8'), storedAt, cacheable }
}
