import { describe, expect, it } from 'vitest'
import { makeSnapshot, probeTree } from '../../test/helpers/make-snapshot.js'
import { responseKeys, sectionOf, tagHeaders } from './surrogate-keys.js'

/** 3 Home › {4 Blog One › 6 Child; 5 Alpha; 8 alpha-alias} */
const probe = probeTree()

/** 9 is a live page below an unpublished one: not under the root. */
const withOrphan = makeSnapshot([
  { id: 3, parent: null },
  { id: 4, parent: 3 },
  { id: 9, parent: null },
  { id: 10, parent: 9 },
  { id: 5, parent: 3 },
])

describe('sectionOf', () => {
  it('is the ancestor that is a child of the root, the page itself at that level, and the root for the root', () => {
    expect(sectionOf(probe, 6)).toBe(4)
    expect(sectionOf(probe, 4)).toBe(4)
    expect(sectionOf(probe, 5)).toBe(5)
    expect(sectionOf(probe, 3)).toBe(3)
  })

  it('is undefined for a page that is not under the root or not in the snapshot', () => {
    expect(sectionOf(withOrphan, 9)).toBeUndefined()
    expect(sectionOf(withOrphan, 10)).toBeUndefined()
    expect(sectionOf(withOrphan, 4)).toBe(4)
    expect(sectionOf(probe, 999)).toBeUndefined()
  })

  it('answers the same from its memo, whichever page is asked first', () => {
    const deep = makeSnapshot([
      { id: 1, parent: null }, { id: 2, parent: 1 }, { id: 3, parent: 2 }, { id: 4, parent: 3 }, { id: 5, parent: 1 },
    ])
    expect([4, 3, 2, 1, 5, 4].map((id) => sectionOf(deep, id))).toEqual([2, 2, 2, 1, 5, 2])
  })
})

describe('responseKeys', () => {
  it('tags a detail with its page and its section', () => {
    expect(responseKeys(probe, { kind: 'page', id: 6 })).toEqual(['cms-pages', 'cms-page-6', 'cms-section-4'])
    expect(responseKeys(probe, { kind: 'page', id: 3 })).toEqual(['cms-pages', 'cms-page-3', 'cms-section-3'])
  })

  it('tags scoped lists with their scope, and the section of the page unless it is the root', () => {
    expect(responseKeys(probe, { kind: 'children', id: 4 })).toEqual(['cms-pages', 'cms-children-4', 'cms-section-4'])
    expect(responseKeys(probe, { kind: 'children', id: 3 })).toEqual(['cms-pages', 'cms-children-3'])
    expect(responseKeys(probe, { kind: 'descendants', id: 6 })).toEqual(['cms-pages', 'cms-descendants-6', 'cms-section-4'])
    expect(responseKeys(probe, { kind: 'descendants', id: 3 })).toEqual(['cms-pages', 'cms-descendants-3'])
    expect(responseKeys(probe, { kind: 'ancestors', id: 6 })).toEqual(['cms-pages', 'cms-ancestors-6'])
  })

  it('tags an unscoped list as a list', () => {
    expect(responseKeys(probe, { kind: 'tree' })).toEqual(['cms-pages', 'cms-list'])
  })

  it('gives no section key for an orphan or a missing page', () => {
    expect(responseKeys(withOrphan, { kind: 'page', id: 10 })).toEqual(['cms-pages', 'cms-page-10'])
    expect(responseKeys(withOrphan, { kind: 'children', id: 9 })).toEqual(['cms-pages', 'cms-children-9'])
    expect(responseKeys(probe, { kind: 'page', id: 999 })).toEqual(['cms-pages', 'cms-page-999'])
  })

  it('hands out the same frozen array for the same scope', () => {
    const keys = responseKeys(probe, { kind: 'children', id: 4 })
    expect(responseKeys(probe, { kind: 'children', id: 4 })).toBe(keys)
    expect(Object.isFrozen(keys)).toBe(true)
  })

  it('uses only lower-case tokens without spaces or commas', () => {
    for (const page of probe.pages) {
      for (const kind of ['page', 'children', 'descendants', 'ancestors'] as const) {
        for (const key of responseKeys(probe, { kind, id: page.id })) expect(key).toMatch(/^[a-z0-9-]+$/)
      }
    }
  })
})

describe('tagHeaders', () => {
  it('joins Surrogate-Key with spaces and Cache-Tag with commas', () => {
    expect(tagHeaders(['cms-pages', 'cms-page-6', 'cms-section-4'])).toEqual({
      'surrogate-key': 'cms-pages cms-page-6 cms-section-4',
      'cache-tag': 'cms-pages,cms-page-6,cms-section-4',
    })
  })

  it('drops repeated keys, keeping the first place of each', () => {
    expect(tagHeaders(['cms-pages', 'cms-list', 'cms-pages', 'cms-page-1'])['surrogate-key']).toBe('cms-pages cms-list cms-page-1')
  })

  it('renders no keys as empty values', () => {
    expect(tagHeaders([])).toEqual({ 'surrogate-key': '', 'cache-tag': '' })
  })
})
