/**
 * The public paths of the non-public hooks (`compose/private-apis.ts`): an instance with
 * PRIVATE_APIS=false must answer byte for byte as one that takes the private paths, and count the
 * same requests in its metrics. Compared on the wire, over raw sockets, so the header block Node
 * builds is what is compared.
 */
import { connect, type AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generateSite, startFakeWagtail, type FakeWagtail } from '../fake-wagtail/index.js'
import { startShield, type Harness } from '../helpers/start-shield.js'

let origin: FakeWagtail
let privateShield: Harness
let publicShield: Harness

beforeAll(async () => {
  origin = await startFakeWagtail({ pages: generateSite() })
  privateShield = await startShield({ sharedOrigin: origin })
  publicShield = await startShield({ sharedOrigin: origin, env: { PRIVATE_APIS: 'false' } })
  for (const h of [privateShield, publicShield]) await h.app.listen({ port: 0, host: '127.0.0.1' })
})
afterAll(async () => {
  await privateShield.close()
  await publicShield.close()
  await origin.close()
})

/** Sends raw requests on one connection and returns everything the server wrote until it went quiet or closed. */
async function exchange(h: Harness, raw: string): Promise<string> {
  const socket = connect((h.app.server.address() as AddressInfo).port, '127.0.0.1')
  const chunks: Buffer[] = []
  socket.on('data', (chunk: Buffer) => chunks.push(chunk))
  socket.write(raw)
  await new Promise<void>((resolve) => {
    let quiet = setTimeout(resolve, 300)
    socket.on('data', () => {
      clearTimeout(quiet)
      quiet = setTimeout(resolve, 100)
    })
    socket.on('close', () => resolve())
  })
  socket.destroy()
  // Date changes by the second; a request id is fresh per answer.
  return Buffer.concat(chunks).toString('latin1').replace(/\r\nDate: [^\r]*/g, '').replace(/\r\nx-request-id: [^\r]*/gi, '')
}

const requestLines = (metrics: string) => metrics.split('\n').filter((line) => line.startsWith('cms_shield_http_request')).sort()

describe('PRIVATE_APIS', () => {
  it('takes every private path on the Node lines CI runs, and every public one when false', async () => {
    const text = (h: Harness) => h.app.inject({ method: 'GET', url: '/metrics' }).then((r) => r.body)
    for (const api of ['preparedHeaders', 'talliedMetrics', 'heapReclaim']) {
      expect(await text(privateShield)).toContain(`cms_shield_private_api{api="${api}",path="private"} 1`)
      expect(await text(publicShield)).toContain(`cms_shield_private_api{api="${api}",path="public"} 1`)
    }
  })

  it('false answers byte for byte as the private paths do, and counts the same requests', async () => {
    const id = privateShield.app.shield.sync.current!.pages.at(3)!.id
    const get = (path: string, extra = '') => `GET ${path} HTTP/1.1\r\nHost: shield.example\r\n${extra}\r\n`
    const detail = await exchange(privateShield, get(`/api/v1/cms/pages/${id}/`))
    expect(await exchange(publicShield, get(`/api/v1/cms/pages/${id}/`))).toBe(detail)
    const etag = /\r\netag: ([^\r]*)/i.exec(detail)?.[1]
    expect(etag).toBeDefined()
    const conversations = [
      get(`/api/v1/cms/pages/${id}/`) + get('/api/v1/cms/pages/?limit=3') + get('/api/v1/cms/pages/999999/'),
      get(`/api/v1/cms/pages/${id}/`, `If-None-Match: ${etag}\r\n`),
      `HEAD /api/v1/cms/pages/ HTTP/1.1\r\nHost: shield.example\r\n\r\n`,
      `GET /api/v1/cms/pages/${id}/ HTTP/1.0\r\n\r\n`,
      get('/api/v1/cms/pages/?limit=2', 'Connection: close\r\n'),
      get('/healthz'),
    ]
    for (const raw of conversations) {
      const expected = await exchange(privateShield, raw)
      expect(expected).toMatch(/^HTTP\/1\.1 /)
      expect(await exchange(publicShield, raw), raw).toBe(expected)
    }
    const privateMetrics = (await privateShield.app.inject({ method: 'GET', url: '/metrics' })).body
    const publicMetrics = (await publicShield.app.inject({ method: 'GET', url: '/metrics' })).body
    const counted = requestLines(privateMetrics).filter((line) => line.startsWith('cms_shield_http_requests_total'))
    expect(counted.length).toBeGreaterThan(3)
    expect(requestLines(publicMetrics).filter((line) => line.startsWith('cms_shield_http_requests_total'))).toEqual(counted)
    // The histogram's series and counts agree too (the sums and buckets are durations, which differ).
    const observed = (text: string) => requestLines(text).filter((line) => line.startsWith('cms_shield_http_request_duration_seconds_count'))
    expect(observed(privateMetrics).length).toBeGreaterThan(1)
    expect(observed(publicMetrics)).toEqual(observed(privateMetrics))
  })
})
