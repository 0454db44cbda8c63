import { afterEach, describe, expect, it } from 'vitest'
import { generateSite, startFakeWagtail, type FakeWagtail } from '../../test/fake-wagtail/index.js'
import { probeBareListing } from './probe-bare-listing.js'
import type { UpstreamGet } from './upstream-port.js'

let fake: FakeWagtail | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
})

function getOf(origin: FakeWagtail): UpstreamGet {
  return async (path) => {
    const answer = await fetch(origin.url + path)
    return { status: answer.status, contentType: answer.headers.get('content-type') ?? '', headers: {}, text: await answer.text() }
  }
}

describe('probeBareListing', () => {
  it('finds the listing read without html_url, the URL written back, the default one', async () => {
    fake = await startFakeWagtail({ pages: generateSite({ pages: 20 }) })
    expect(await probeBareListing(getOf(fake), '/api/v1/cms/pages/', { locale: true })).toBe(true)
    expect(await probeBareListing(getOf(fake), '/api/v1/cms/pages/', undefined)).toBe(true)
  })

  it('keeps html_url in the listing of a CMS that refuses to leave it out', async () => {
    fake = await startFakeWagtail({ pages: generateSite({ pages: 20 }) })
    const origin = getOf(fake)
    const get: UpstreamGet = (path, signal) => (path.includes('-html_url') ? origin('/api/v1/cms/pages/?fields=nonsense', signal) : origin(path, signal))
    expect(await probeBareListing(get, '/api/v1/cms/pages/', { locale: true })).toBe(false)
  })

  it('keeps html_url in the listing of a CMS that ignores the request to leave it out', async () => {
    fake = await startFakeWagtail({ pages: generateSite({ pages: 20 }) })
    const origin = getOf(fake)
    const get: UpstreamGet = (path, signal) => origin(path.replace('-html_url,', ''), signal)
    expect(await probeBareListing(get, '/api/v1/cms/pages/', { locale: true })).toBe(false)
  })
})
