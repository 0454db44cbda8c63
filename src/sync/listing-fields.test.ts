import { describe, expect, it } from 'vitest'
import { getMember, parseJsonSpans } from '../json/json-spans.js'
import { renderWagtailJson } from '../json/json-text.js'
import { probeListingFields, stripExtraFields } from './listing-fields.js'
import type { UpstreamAnswer, UpstreamGet } from './upstream-port.js'

const item = (extra: boolean) => ({
  id: 4,
  meta: {
    type: 'blog.BlogPage',
    detail_url: 'http://cms/api/v1/cms/pages/4/',
    html_url: 'http://site/blog/',
    slug: 'blog',
    ...(extra ? { show_in_menus: true, seo_title: 'S "q"', search_description: '' } : {}),
    first_published_at: '2024-05-06T07:08:09Z',
  },
  title: 'Blog ☃',
})

function itemText(body: unknown): { text: string; node: ReturnType<typeof parseJsonSpans> } {
  const text = renderWagtailJson(body)
  const node = (getMember(parseJsonSpans(text), 'items') as { items: ReturnType<typeof parseJsonSpans>[] }).items[0]!
  return { text, node }
}

describe('stripExtraFields', () => {
  it('gives the default listing item byte for byte', () => {
    const plain = itemText({ meta: { total_count: 1 }, items: [item(false)] })
    const extended = itemText({ meta: { total_count: 1 }, items: [item(true)] })
    expect(stripExtraFields(extended.text, extended.node)).toBe(plain.text.slice(plain.node.start, plain.node.end))
  })

  it('leaves an item without the fields as it is', () => {
    const plain = itemText({ meta: { total_count: 1 }, items: [item(false)] })
    expect(stripExtraFields(plain.text, plain.node)).toBe(plain.text.slice(plain.node.start, plain.node.end))
  })
})

describe('probeListingFields', () => {
  const json = (status: number, body: unknown): UpstreamAnswer => ({ status, contentType: 'application/json', headers: {}, text: renderWagtailJson(body) })

  it('uses the fields when cutting them out gives the default items', async () => {
    const get: UpstreamGet = async (path) => json(200, { meta: { total_count: 1 }, items: [item(path.includes('fields='))] })
    expect(await probeListingFields(get, '/api/')).toBe(true)
  })

  it('does without them when the CMS refuses them (a Page model without these fields)', async () => {
    const get: UpstreamGet = async (path) =>
      path.includes('fields=') ? json(400, { message: 'unknown fields: seo_title' }) : json(200, { meta: { total_count: 1 }, items: [item(false)] })
    expect(await probeListingFields(get, '/api/')).toBe(false)
  })

  it('does without them when the items would not come out the same', async () => {
    const get: UpstreamGet = async (path) => json(200, { meta: { total_count: 1 }, items: [{ ...item(path.includes('fields=')), title: path }] })
    expect(await probeListingFields(get, '/api/')).toBe(false)
  })
})
