/**
 * Side-by-side checks: the same request to cms-shield and to the (fake) CMS must get the same
 * status, Content-Type, Allow, Location and body — with detail_urls on BASE_URL — and we count
 * what cms-shield itself asked the CMS for.
 */
import { expect } from 'vitest'
import { asServedByShield, type Harness } from '../helpers/start-shield.js'

export interface Compared {
  /** Requests cms-shield made to the CMS to answer. */
  readonly cmsHits: number
  readonly status: number
  readonly body: string
  readonly headers: Record<string, unknown>
}

export async function expectSameAsCms(
  harness: Harness,
  url: string,
  init: { method?: string; headers?: Record<string, string> } = {},
): Promise<Compared> {
  const method = init.method ?? 'GET'
  const headers = init.headers ?? {}
  const before = harness.origin.hits.total
  const ours = await harness.app.inject({ method: method as 'GET', url, headers })
  const cmsHits = harness.origin.hits.total - before
  const theirs = await fetch(harness.origin.url + url, { method, headers, redirect: 'manual' })
  const theirBody = method === 'HEAD' ? '' : await theirs.text()
  const apiPath = harness.app.shield.config.apiPath

  expect(ours.statusCode, `${method} ${url}: status`).toBe(theirs.status)
  expect(ours.headers['content-type'], `${method} ${url}: content-type`).toBe(theirs.headers.get('content-type'))
  expect(ours.body, `${method} ${url}: body`).toBe(asServedByShield(theirBody, apiPath))
  const theirAllow = theirs.headers.get('allow')
  if (theirAllow !== null) {
    expect(ours.headers['allow'], `${method} ${url}: allow`).toBe(theirAllow)
    // The seed's Vary is `Accept`; cms-shield never reads sessions, so never varies on Cookie.
    expect(ours.headers['vary'], `${method} ${url}: vary`).toBe('Accept')
  }
  const theirLocation = theirs.headers.get('location')
  expect(ours.headers['location'] ?? null, `${method} ${url}: location`).toBe(theirLocation === null ? null : asServedByShield(theirLocation, apiPath))
  if (theirs.headers.get('content-length') !== null && method !== 'HEAD') {
    expect(ours.headers['content-length'], `${method} ${url}: content-length`).toBe(String(Buffer.byteLength(ours.body)))
  }
  return { cmsHits, status: ours.statusCode, body: ours.body, headers: ours.headers }
}
