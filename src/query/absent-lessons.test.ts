import { describe, expect, it } from 'vitest'
import { probeTree } from '../../test/helpers/make-snapshot.js'
import { absentLesson } from './absent-lessons.js'
import { createKnownAbsent, findPathKey } from './known-absent.js'
import { parseQueryParams } from './query-params.js'

const snapshot = probeTree()
/** Wagtail's JSON error body, as the CMS writes it (4-space indent). */
const body = (message: string) => Buffer.from(JSON.stringify({ message }, null, 4))

describe('absentLesson', () => {
  it.each(['listing', 'detail', 'find'] as const)('learns from the %s view that the one type the snapshot has not seen does not exist', (view) => {
    const known = createKnownAbsent(10)
    const lesson = absentLesson(view, parseQueryParams('type=home.BlogPage,home.Nope&limit=1'), snapshot, known)
    expect(lesson?.(400, body("type doesn't exist"))).toBe(true)
    expect(known.hasType('home.nope')).toBe(true)
    expect(known.hasType('home.blogpage')).toBe(false)
  })

  it('learns the same name spelled twice', () => {
    const known = createKnownAbsent(10)
    expect(absentLesson('listing', parseQueryParams('type=home.Nope,home.NOPE'), snapshot, known)?.(400, body("type doesn't exist"))).toBe(true)
    expect(known.hasType('home.nope')).toBe(true)
  })

  it.each([
    // Which of two unseen names failed, the answer does not say.
    'type=home.Nope,home.Other',
    // Nothing for the CMS to decide about types.
    'type=home.BlogPage',
    '',
    'type=nope',
  ])('has nothing to learn from the type of ?%s', (query) => {
    expect(absentLesson('listing', parseQueryParams(query), snapshot, createKnownAbsent(10))).toBeUndefined()
  })

  it.each([
    [400, body('limit must be a positive integer')],
    [200, Buffer.from('{"message": "type doesn\'t exist"}')],
    [400, Buffer.from('<html>type doesn\'t exist</html>')],
    [404, body('not found')],
  ])('learns nothing from a %i that is not "type doesn\'t exist"', (status, answer) => {
    const known = createKnownAbsent(10)
    expect(absentLesson('listing', parseQueryParams('type=home.Nope'), snapshot, known)?.(status, answer)).toBe(false)
    expect(known.hasType('home.nope')).toBe(false)
  })

  it('learns that a find path gave nothing in the queryset its type and site chose', () => {
    const known = createKnownAbsent(10)
    const lesson = absentLesson('find', parseQueryParams('html_path=/nope/&type=home.BlogPage&site=localhost&fields=x'), snapshot, known)
    expect(lesson?.(404, body('not found'))).toBe(true)
    expect(known.hasFindPath(findPathKey('nope', 'home.blogpage', 'localhost'))).toBe(true)
    expect(known.hasFindPath(findPathKey('nope', undefined, undefined))).toBe(false)
  })

  it('learns no find path from another 404, from another view, or without html_path', () => {
    const known = createKnownAbsent(10)
    expect(absentLesson('find', parseQueryParams('html_path=/nope/&site=x'), snapshot, known)?.(404, body('No Site matches the given query.'))).toBe(false)
    expect(absentLesson('find', parseQueryParams('html_path=/nope/'), snapshot, known)?.(404, body(''))).toBe(false)
    expect(absentLesson('listing', parseQueryParams('html_path=/nope/'), snapshot, known)).toBeUndefined()
    expect(absentLesson('find', parseQueryParams('id=999'), snapshot, known)).toBeUndefined()
    expect(known.hasFindPath(findPathKey('nope', undefined, undefined))).toBe(false)
  })
})
