import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { makeSnapshot } from '../../test/helpers/make-snapshot.js'
import { createKnownAbsent, createKnownAbsentPerSnapshot, findPathKey, NOTHING_KNOWN_ABSENT, typeKey } from './known-absent.js'

describe('known absent', () => {
  it('remembers the last maxEntries distinct names of each kind, the most recently added kept longest', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom<string>('a', 'b', 'c', 'd', 'e', 'f')), fc.integer({ min: 1, max: 4 }), (added, max) => {
        const known = createKnownAbsent(max)
        for (const key of added) known.addType(key)
        // Newest first, each once: the ones kept.
        const newest = [...new Set([...added].reverse())].slice(0, max)
        for (const key of ['a', 'b', 'c', 'd', 'e', 'f']) {
          expect(known.hasType(key)).toBe(newest.includes(key))
          expect(known.hasFindPath(key)).toBe(false)
        }
      }),
    )
  })

  it('keeps types and find paths apart, each with its own bound', () => {
    const known = createKnownAbsent(1)
    known.addType('cms.nope')
    known.addFindPath('cms.nope')
    expect([known.hasType('cms.nope'), known.hasFindPath('cms.nope')]).toEqual([true, true])
  })

  it('starts empty for each new snapshot, and keeps what it learned while the snapshot stays', () => {
    const one = makeSnapshot([{ id: 1, parent: null }])
    const two = makeSnapshot([{ id: 1, parent: null }], {}, 2)
    const knownFor = createKnownAbsentPerSnapshot(10)
    knownFor(one).addType('cms.nope')
    expect(knownFor(one).hasType('cms.nope')).toBe(true)
    expect(knownFor(two).hasType('cms.nope')).toBe(false)
    expect(knownFor(one).hasType('cms.nope')).toBe(false)
  })

  it('learns nothing when asked to know nothing', () => {
    NOTHING_KNOWN_ABSENT.addType('cms.nope')
    NOTHING_KNOWN_ABSENT.addFindPath('x')
    expect([NOTHING_KNOWN_ABSENT.hasType('cms.nope'), NOTHING_KNOWN_ABSENT.hasFindPath('x')]).toEqual([false, false])
  })
})

describe('typeKey', () => {
  const part = fc.string({ minLength: 1 }).filter((text) => !text.includes('.'))

  it('keys app.Model with the app label exact and the model name lower-cased', () => {
    fc.assert(
      fc.property(part, part, (app, model) => {
        expect(typeKey(`${app}.${model}`)).toBe(`${app}.${model.toLowerCase()}`)
        expect(typeKey(`${app}.${model.toUpperCase()}`)).toBe(typeKey(`${app}.${model.toLowerCase()}`))
      }),
    )
  })

  it.each(['', 'nope', '.Page', 'home.', 'a.b.c', '..'])('has no key for the malformed %j', (name) => {
    expect(typeKey(name)).toBeUndefined()
  })
})

describe('findPathKey', () => {
  const segment = fc.string({ minLength: 1 }).filter((text) => !text.includes('/'))
  const slashes = fc.integer({ min: 0, max: 3 }).map((n) => '/'.repeat(n))

  it('is the same for every spelling of a path that routes alike (empty components dropped)', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(slashes, segment)), slashes, (parts, tail) => {
        const spelled = parts.map(([before, name]) => `${before}${name}`).join('/') + tail
        const plain = parts.map(([, name]) => name).join('/')
        expect(findPathKey(spelled, undefined, undefined)).toBe(findPathKey(plain, undefined, undefined))
      }),
    )
  })

  it('tells querysets apart by type (in any order and case of model name) and site', () => {
    const key = findPathKey('a/b', 'cms.Foo,cms.Bar', undefined)
    expect(findPathKey('/a/b/', 'cms.bar,cms.FOO', undefined)).toBe(key)
    expect(findPathKey('a/b', 'cms.Foo', undefined)).not.toBe(key)
    expect(findPathKey('a/b', undefined, undefined)).not.toBe(findPathKey('a/b', '', undefined))
    expect(findPathKey('a/b', undefined, 'localhost')).not.toBe(findPathKey('a/b', undefined, undefined))
    expect(findPathKey('a', 'b', undefined)).not.toBe(findPathKey('a', undefined, 'b'))
  })
})
