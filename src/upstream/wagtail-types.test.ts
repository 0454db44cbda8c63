import { describe, expect, it } from 'vitest'
import { isDetail, isErrorBody, isListEnvelope, isListItem, isNestedPage } from './wagtail-types.js'

// Shapes as captured from Wagtail 7.4.3 (shared spec/wagtail-probes.txt).
const home = {
  id: 3,
  meta: {
    type: 'home.HomePage', detail_url: 'http://localhost/api/v1/cms/pages/3/', html_url: 'http://localhost/', slug: 'homepage',
    show_in_menus: false, seo_title: '', search_description: '', first_published_at: '2026-11-21T18:57:17.391666Z', alias_of: null, parent: null,
  },
  title: 'Home',
}
const parent = { id: 3, meta: { type: 'home.HomePage', detail_url: 'http://localhost/api/v1/cms/pages/3/', html_url: 'http://localhost/' }, title: 'Home' }
const alias = {
  id: 8,
  meta: {
    type: 'home.BlogPage', detail_url: 'http://localhost/api/v1/cms/pages/8/', html_url: 'http://localhost/alpha-alias/', slug: 'alpha-alias',
    show_in_menus: false, seo_title: '', search_description: '', first_published_at: null,
    alias_of: { id: 5, meta: { type: 'home.BlogPage', detail_url: 'http://localhost/api/v1/cms/pages/5/', html_url: 'http://localhost/alpha/' }, title: 'Alpha' },
    parent,
  },
  title: 'Alpha', date: null, intro: '', body: '',
}
const item = {
  id: 4,
  meta: { type: 'home.BlogPage', detail_url: 'http://localhost/api/v1/cms/pages/4/', html_url: 'http://localhost/blog-one/', slug: 'blog-one', first_published_at: '2024-05-06T07:08:09Z' },
  title: 'Blog One ü ☃',
}

describe('wagtail shape guards', () => {
  it('accepts the details Wagtail sends, root and alias included', () => {
    expect(isDetail(home)).toBe(true)
    expect(isDetail(alias)).toBe(true)
    expect(isDetail({ ...home, id: 12345678901234567890n })).toBe(true)
  })

  it('refuses a detail without parent, or with a malformed one', () => {
    const { parent: _dropped, ...withoutParent } = alias.meta
    expect(isDetail({ ...alias, meta: withoutParent })).toBe(false)
    expect(isDetail({ ...alias, meta: { ...alias.meta, parent: { id: 3 } } })).toBe(false)
    expect(isDetail({ ...home, meta: { ...home.meta, show_in_menus: 'false' } })).toBe(false)
    expect(isDetail({ ...home, id: -1 })).toBe(false)
    expect(isDetail({ ...home, id: 1.5 })).toBe(false)
  })

  it('accepts a listing envelope and refuses a broken one', () => {
    expect(isListEnvelope({ meta: { total_count: 1 }, items: [item] })).toBe(true)
    expect(isListEnvelope({ meta: { total_count: 0 }, items: [] })).toBe(true)
    expect(isListEnvelope({ meta: { total_count: '1' }, items: [item] })).toBe(false)
    expect(isListEnvelope({ meta: { total_count: 1 }, items: [{ ...item, title: null }] })).toBe(false)
    expect(isListEnvelope({ items: [] })).toBe(false)
    expect(isListEnvelope([])).toBe(false)
    expect(isListEnvelope(null)).toBe(false)
  })

  it('treats nullable Wagtail fields as nullable', () => {
    expect(isListItem({ ...item, meta: { ...item.meta, type: null, html_url: null, first_published_at: null } })).toBe(true)
    expect(isNestedPage(parent)).toBe(true)
  })

  it('recognises both error body styles', () => {
    expect(isErrorBody({ message: 'not found' })).toBe(true)
    expect(isErrorBody({ detail: 'Method "POST" not allowed.' })).toBe(true)
    expect(isErrorBody({ error: 'x' })).toBe(false)
  })
})
