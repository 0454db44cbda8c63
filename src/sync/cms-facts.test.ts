import { describe, expect, it } from 'vitest'
import { DEFAULT_DIALECT } from '../../test/helpers/make-snapshot.js'
import { createCmsFacts } from './cms-facts.js'
import type { UpstreamAnswer, UpstreamGet } from './upstream-port.js'

/** A CMS with a page size of `limit.max` that answers every probe, counting the requests. */
function probedCms() {
  const limit = { max: 20 }
  const paths: string[] = []
  const json = (status: number, body: unknown): UpstreamAnswer => ({ status, contentType: 'application/json', headers: {}, text: JSON.stringify(body) })
  const get: UpstreamGet = async (path) => {
    paths.push(path)
    if (path.includes('offset=1000000000')) return json(400, { message: `limit cannot be higher than ${limit.max}` })
    if (path.includes('find/')) return { status: 302, contentType: 'text/html', headers: { location: 'http://cms/pages/1/' }, text: '' }
    if (path.includes('format=api')) return json(406, { detail: 'Nicht akzeptabel.' })
    return json(200, { meta: { total_count: 0 }, items: [] })
  }
  return { limit, paths, get }
}

const signal = new AbortController().signal

describe('CMS facts', () => {
  it('asks for the page size on every full sync, and an incremental one reuses the dialect\'s', async () => {
    const cms = probedCms()
    const facts = createCmsFacts(cms.get, '/pages/')
    expect(await facts.pageSize(false, signal)).toBe(20) // nothing learned yet: asked
    await facts.dialect(1, 20, signal)
    cms.limit.max = 10
    expect(await facts.pageSize(false, signal)).toBe(20)
    expect(await facts.pageSize(true, signal)).toBe(10)
    expect(await facts.probePageSize(signal)).toBe(10)
    expect(cms.paths.filter((p) => p.includes('offset=1000000000'))).toHaveLength(3)
  })

  it('probes the dialect once, then only follows the page size', async () => {
    const cms = probedCms()
    const facts = createCmsFacts(cms.get, '/pages/')
    const first = await facts.dialect(1, 20, signal)
    expect(first).toEqual({ limitMax: 20, emptyTypeIgnored: true, findKeepsQuery: false, nulInTextFilter: 'matches-nothing', notAcceptableText: 'Nicht akzeptabel.' })
    const requests = cms.paths.length
    expect(await facts.dialect(1, 20, signal)).toBe(first)
    expect(await facts.dialect(1, 50, signal)).toEqual({ ...first, limitMax: 50 })
    expect(cms.paths).toHaveLength(requests)
  })

  it('takes the dialect a snapshot from storage or a peer brings, and asks nothing for it', async () => {
    const cms = probedCms()
    const facts = createCmsFacts(cms.get, '/pages/')
    facts.adopt(DEFAULT_DIALECT)
    expect(await facts.pageSize(false, signal)).toBe(DEFAULT_DIALECT.limitMax)
    expect(await facts.dialect(1, DEFAULT_DIALECT.limitMax, signal)).toBe(DEFAULT_DIALECT)
    expect(cms.paths).toEqual([])
  })

  it('asks whether the listing takes the extra fields once', async () => {
    const cms = probedCms()
    const facts = createCmsFacts(cms.get, '/pages/')
    const first = await facts.listingFields(signal)
    const requests = cms.paths.length
    expect(await facts.listingFields(signal)).toBe(first)
    expect(cms.paths).toHaveLength(requests)
  })

  it('asks whether the listing can be read without html_url until the CMS shows a page, and never when SYNC_DERIVE_URLS is off', async () => {
    const off = probedCms()
    expect(await createCmsFacts(off.get, '/pages/').derivesUrls({ locale: false }, signal)).toBe(false)
    expect(off.paths).toEqual([])
    const on = probedCms()
    const facts = createCmsFacts(on.get, '/pages/', true)
    // An empty listing shows nothing to compare: the listing keeps html_url, and is asked again.
    expect(await facts.derivesUrls({ locale: false }, signal)).toBe(false)
    const requests = on.paths.length
    expect(requests).toBe(2)
    expect(await facts.derivesUrls({ locale: false }, signal)).toBe(false)
    expect(on.paths).toHaveLength(2 * requests)
  })
})
