import { describe, expect, it } from 'vitest'
import { makeSnapshot, probeTree } from '../../test/helpers/make-snapshot.js'
import { ABSENT_FIND_KEYS, absentDetailKeys, detailKeys, findKeys, listKeys } from './answer-keys.js'
import type { ListQuery } from './page-selection.js'
import { selectPages } from './select-pages.js'
import { KEY_HEADER_MAX_BYTES, MAX_KEY_LENGTH, headerLength, tagHeaders } from './surrogate-keys.js'

/** 3 Home › {4 Blog One › 6 Child; 5 Alpha; 8 alpha-alias} */
const probe = probeTree()
const query = (extra: Partial<ListQuery> = {}): ListQuery => ({ types: null, filters: {}, specific: false, offset: 0, limit: 20, ...extra })
const keysOf = (q: ListQuery) => listKeys(probe, q, selectPages(probe, q).slice(q.offset, q.offset + q.limit))

describe('answer keys', () => {
  it('names a detail\'s page, its parent\'s summary and the place of every page from it up', () => {
    expect(detailKeys(probe, probe.byId.get(6)!)).toEqual(['cms-pages', 'cms-page-6', 'cms-summary-4', 'cms-path-6', 'cms-path-4', 'cms-path-3'])
    expect(detailKeys(probe, probe.byId.get(3)!)).toEqual(['cms-pages', 'cms-page-3', 'cms-path-3'])
  })

  it('names an absent id\'s 404 by the detail key its creation purges', () => {
    expect(absentDetailKeys(77)).toEqual(['cms-pages', 'cms-page-77'])
  })

  it('names a children list by its membership, its scope\'s places and each item shown', () => {
    expect(keysOf(query({ childOf: 3 }))).toEqual(['cms-pages', 'cms-children-3', 'cms-path-3', 'cms-item-4', 'cms-item-5', 'cms-item-8'])
  })

  it('adds the field keys of a list\'s filters, and fields keys for ?fields= items', () => {
    const fields = { key: 'title', body: ['id', 'title'], meta: ['type'] }
    expect(keysOf(query({ childOf: 3, filters: { showInMenus: true }, fields }))).toEqual(
      expect.arrayContaining(['cms-children-3-menus-true', 'cms-children-3-show_in_menus']),
    )
    expect(keysOf(query({ childOf: 3, fields })).filter((key) => key.startsWith('cms-item'))).toEqual([])
  })

  it('names the places between a descendants list\'s scope and its items once each', () => {
    const keys = keysOf(query({ descendantOf: 3 }))
    expect(keys).toEqual(['cms-pages', 'cms-descendants-3', 'cms-path-3', 'cms-item-4', 'cms-item-6', 'cms-path-4', 'cms-item-5', 'cms-item-8'])
  })

  it('names an ancestors list by the page\'s parent link and each page of the chain', () => {
    expect(keysOf(query({ ancestorOf: 6 }))).toEqual(['cms-pages', 'cms-ancestors-6', 'cms-path-4', 'cms-item-4', 'cms-path-3', 'cms-item-3'])
  })

  it('names a list that shows no item by the existence of its scope, not by addresses', () => {
    expect(keysOf(query({ childOf: 6 }))).toEqual(['cms-pages', 'cms-children-6', 'cms-exists-6'])
  })

  it('names the items of a list too long for one header by its scope\'s items key', () => {
    const pages = [{ id: 1, parent: null }, ...Array.from({ length: 1000 }, (_, i) => ({ id: 100_000 + i, parent: 1 }))]
    const wide = makeSnapshot(pages)
    const q = query({ childOf: 1, limit: 1000 })
    const keys = listKeys(wide, q, selectPages(wide, q))
    expect(keys).toEqual(['cms-pages', 'cms-children-1', 'cms-path-1', 'cms-children-1-items'])
    const narrow = query({ childOf: 1, limit: 20 })
    expect(headerLength(listKeys(wide, narrow, selectPages(wide, narrow).slice(0, 20)))).toBeLessThanOrEqual(KEY_HEADER_MAX_BYTES)
  })

  it('names a find/ redirect by the found page\'s places, and its item when a type is asked', () => {
    expect(findKeys(probe, probe.byId.get(6)!, false)).toEqual(['cms-pages', 'cms-path-6', 'cms-path-4', 'cms-path-3'])
    expect(findKeys(probe, probe.byId.get(6)!, true)).toContain('cms-item-6')
    expect(ABSENT_FIND_KEYS).toEqual(['cms-pages', 'cms-list', 'cms-list-slug'])
  })

  it('keeps every key within MAX_KEY_LENGTH, narrowing to a long type name by the whole scope instead', () => {
    const longType = `app.${'VeryLong'.repeat(8)}Page`
    const keys = keysOf(query({ descendantOf: 3, types: new Set([longType]), specific: true, filters: { searchDescription: 'x' } }))
    expect(keys).toContain('cms-descendants-3')
    expect(keys.every((key) => key.length <= MAX_KEY_LENGTH)).toBe(true)
    expect(keysOf(query({ descendantOf: 3, types: new Set(['blog.BlogPage']), specific: true }))).toContain('cms-descendants-3-type-blog.blogpage')
  })

  it('uses only lower-case tokens without spaces or commas', () => {
    for (const key of [...detailKeys(probe, probe.byId.get(6)!), ...keysOf(query({ descendantOf: 3, filters: { title: 'A b,c' } }))]) {
      expect(key).toMatch(/^[a-z0-9_.-]+$/)
    }
  })
})

describe('tagHeaders', () => {
  it('joins Surrogate-Key with spaces and Cache-Tag with commas', () => {
    expect(tagHeaders(['cms-pages', 'cms-page-6', 'cms-path-4'])).toEqual({
      'surrogate-key': 'cms-pages cms-page-6 cms-path-4',
      'cache-tag': 'cms-pages,cms-page-6,cms-path-4',
    })
  })

  it('drops repeated keys, keeping the first place of each', () => {
    expect(tagHeaders(['cms-pages', 'cms-list', 'cms-pages', 'cms-page-1'])['surrogate-key']).toBe('cms-pages cms-list cms-page-1')
  })

  it('renders no keys as empty values', () => {
    expect(tagHeaders([])).toEqual({ 'surrogate-key': '', 'cache-tag': '' })
  })
})
