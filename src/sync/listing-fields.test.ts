import { describe, expect, it } from 'vitest'
import { getMember, parseJsonSpans } from '../json/json-spans.js'
import { renderWagtailJson } from '../json/json-text.js'
import { listingFieldsParam, probeListingFields, stripExtraFields } from './listing-fields.js'
import type { UpstreamAnswer, UpstreamGet } from './upstream-port.js'

const item = (extra: boolean, locale?: string) => ({
  id: 4,
  meta: {
    type: 'blog.BlogPage',
    detail_url: 'http://cms/api/v1/cms/pages/4/',
    html_url: 'http://site/blog/',
    slug: 'blog',
    ...(extra ? { show_in_menus: true, seo_title: 'S "q"', search_description: '' } : {}),
    first_published_at: '2024-05-06T07:08:09Z',
    ...(locale === undefined ? {} : { locale }),
  },
  title: 'Blog ☃',
})

function itemText(body: unknown): { text: string; node: ReturnType<typeof parseJsonSpans> } {
  const text = renderWagtailJson(body)
  const node = (getMember(parseJsonSpans(text), 'items') as { items: ReturnType<typeof parseJsonSpans>[] }).items[0]!
  return { text, node }
}

const listing = (...items: unknown[]) => ({ meta: { total_count: items.length }, items })

describe('stripExtraFields', () => {
  it('gives the default listing item byte for byte', () => {
    const plain = itemText(listing(item(false)))
    const extended = itemText(listing(item(true)))
    expect(stripExtraFields(extended.text, extended.node, { locale: false })).toBe(plain.text.slice(plain.node.start, plain.node.end))
  })

  it('cuts `locale` out too when it was asked for, and keeps it when it is a default field', () => {
    const plain = itemText(listing(item(false)))
    const extended = itemText(listing(item(true, 'en')))
    expect(stripExtraFields(extended.text, extended.node, { locale: true })).toBe(plain.text.slice(plain.node.start, plain.node.end))
    const withLocale = itemText(listing(item(false, 'de')))
    expect(stripExtraFields(extended.text, extended.node, { locale: false })).toBe(withLocale.text.slice(withLocale.node.start, withLocale.node.end).replace('"de"', '"en"'))
  })

  it('leaves an item without the fields as it is', () => {
    const plain = itemText(listing(item(false)))
    expect(stripExtraFields(plain.text, plain.node, { locale: true })).toBe(plain.text.slice(plain.node.start, plain.node.end))
  })
})

describe('probeListingFields', () => {
  const json = (status: number, body: unknown): UpstreamAnswer => ({ status, contentType: 'application/json', headers: {}, text: renderWagtailJson(body) })
  const asks = (path: string, field: string) => new URLSearchParams(path.split('?')[1]).get('fields')?.split(',').includes(field) ?? false

  it('asks for `locale` too when the default items leave it out (WAGTAIL_I18N_ENABLED off)', async () => {
    const get: UpstreamGet = async (path) => json(200, listing(item(asks(path, 'seo_title'), asks(path, 'locale') ? 'en' : undefined)))
    expect(await probeListingFields(get, '/api/')).toEqual({ locale: true })
    expect(listingFieldsParam({ locale: true })).toBe('fields=show_in_menus,seo_title,search_description,locale&')
  })

  it('asks for the flags alone when the default items show `locale`', async () => {
    const get: UpstreamGet = async (path) => json(200, listing(item(asks(path, 'seo_title'), 'de')))
    expect(await probeListingFields(get, '/api/')).toEqual({ locale: false })
  })

  it('keeps the flags when the CMS refuses `locale`', async () => {
    const paths: string[] = []
    const get: UpstreamGet = async (path) => {
      paths.push(path)
      return asks(path, 'locale') ? json(400, { message: 'unknown fields: locale' }) : json(200, listing(item(asks(path, 'seo_title'))))
    }
    expect(await probeListingFields(get, '/api/')).toEqual({ locale: false })
    expect(paths).toHaveLength(3)
  })

  it('does without them when the CMS refuses them (a Page model without these fields)', async () => {
    const get: UpstreamGet = async (path) =>
      path.includes('fields=') ? json(400, { message: 'unknown fields: seo_title' }) : json(200, listing(item(false)))
    expect(await probeListingFields(get, '/api/')).toBeUndefined()
  })

  it('does without them when the items would not come out the same', async () => {
    const get: UpstreamGet = async (path) => json(200, listing({ ...item(path.includes('fields='), 'en'), title: path }))
    expect(await probeListingFields(get, '/api/')).toBeUndefined()
  })
})
