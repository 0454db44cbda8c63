import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { getMember, parseJsonSpans, type JsonNode } from '../json/json-spans.js'
import { renderWagtailJson } from '../json/json-text.js'
import { htmlUrlOfItem, withHtmlUrl } from './html-url-item.js'

function itemOf(url: string | null | undefined, type = 'blog.BlogPage'): string {
  const meta = { type, detail_url: 'http://cms/api/v1/cms/pages/4/', ...(url === undefined ? {} : { html_url: url }), slug: 'blog', first_published_at: null }
  const text = renderWagtailJson({ meta: { total_count: 1 }, items: [{ id: 4, meta, title: 'Blog "☃"' }] })
  const node = (getMember(parseJsonSpans(text), 'items') as { items: JsonNode[] }).items[0]!
  return text.slice(node.start, node.end)
}

describe('withHtmlUrl', () => {
  it('writes html_url back after detail_url exactly as the CMS writes it', () => {
    expect(withHtmlUrl(itemOf(undefined), 'http://site/blog/')).toBe(itemOf('http://site/blog/'))
    expect(withHtmlUrl(itemOf(undefined), null)).toBe(itemOf(null))
  })

  it('replaces the URL of an item that has one', () => {
    expect(withHtmlUrl(itemOf('http://site/old/'), 'http://site/new/')).toBe(itemOf('http://site/new/'))
    expect(withHtmlUrl(itemOf(null), 'http://site/new/')).toBe(itemOf('http://site/new/'))
    expect(withHtmlUrl(itemOf('http://site/new/'), null)).toBe(itemOf(null))
  })

  it('refuses an item not laid out as Wagtail writes it', () => {
    expect(withHtmlUrl('{"id": 4, "title": "x"}', 'http://site/')).toBeUndefined()
    expect(withHtmlUrl('{"id": 4, "meta": {"detail_url": "http://cms/", "type": "a.B"}}', 'http://site/')).toBeUndefined()
  })

  it('round-trips any URL and layout', () => {
    fc.assert(fc.property(fc.option(fc.string(), { nil: null }), fc.constantFrom('a.B', 'x.Y"z'), (url, type) => {
      expect(withHtmlUrl(itemOf(undefined, type), url)).toBe(itemOf(url, type))
      expect(htmlUrlOfItem(itemOf(url, type))).toBe(url)
    }))
  })
})

describe('htmlUrlOfItem', () => {
  it('reads the URL, null, or nothing', () => {
    expect(htmlUrlOfItem(itemOf('http://site/a/'))).toBe('http://site/a/')
    expect(htmlUrlOfItem(itemOf(null))).toBeNull()
    expect(htmlUrlOfItem(itemOf(undefined))).toBeUndefined()
  })
})
