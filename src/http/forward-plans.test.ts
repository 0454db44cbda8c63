import { describe, expect, it } from 'vitest'
import { createKnownAbsentPerSnapshot } from '../query/known-absent.js'
import { parseQueryParams } from '../query/query-params.js'
import { treeScope } from '../tree/list-scope.js'
import { makeSnapshot } from '../../test/helpers/make-snapshot.js'
import { createForwardPlans, forwardKey } from './forward-plans.js'

const plansOf = () => createForwardPlans({ pagesEndpoint: 'pages', knownAbsentOf: createKnownAbsentPerSnapshot(10), maxPlans: 10 })
const request = { rawQuery: 'search=blog', accept: undefined }

describe('forward plans', () => {
  it('are remembered per snapshot, and forgotten by a new one', () => {
    const plans = plansOf()
    const first = makeSnapshot([{ id: 1, parent: null }])
    const key = forwardKey('list', '', request)
    expect(plans.planned(first, key)).toBeUndefined()
    const forward = plans.plan(first, key, 'list', '?search=blog', treeScope, parseQueryParams('search=blog'))
    expect(forward).toMatchObject({ relative: 'pages/?search=blog', viewPath: '?search=blog', store: true, memoKey: key })
    expect(forward.key).toBe(`${forward.digest}:pages/?search=blog`)
    expect(plans.planned(first, key)).toBe(forward)
    expect(plans.planned(makeSnapshot([{ id: 1, parent: null }, { id: 2, parent: 1 }], {}, 2), key)).toBeUndefined()
  })

  it('are keyed by view, path, query and Accept', () => {
    const keys = [forwardKey('list', '', request), forwardKey('find', '', request), forwardKey('detail', '4', request),
      forwardKey('list', '', { rawQuery: undefined, accept: undefined }), forwardKey('list', '', { ...request, accept: 'text/html' })]
    expect(new Set(keys).size).toBe(keys.length)
  })

  it('forget a dropped plan', () => {
    const plans = plansOf()
    const snapshot = makeSnapshot([{ id: 1, parent: null }])
    plans.plan(snapshot, 'k', 'list', '?search=blog', treeScope, parseQueryParams('search=blog'))
    plans.drop('k')
    expect(plans.planned(snapshot, 'k')).toBeUndefined()
  })

  it('name the read-through key a newer digest of the same query left unreachable', () => {
    const plans = plansOf()
    const params = parseQueryParams('search=blog')
    const before = plans.plan(makeSnapshot([{ id: 1, parent: null }]), 'k', 'list', '?search=blog', treeScope, params)
    expect(plans.answered(before)).toBeUndefined()
    expect(plans.answered(before)).toBeUndefined()
    const after = plans.plan(makeSnapshot([{ id: 1, parent: null }, { id: 2, parent: 1 }], {}, 2), 'k', 'list', '?search=blog', treeScope, params)
    expect(after.digest).not.toBe(before.digest)
    expect(plans.answered(after)).toBe(before.key)
  })

  it('never store, nor note, an answer in random order', () => {
    const plans = plansOf()
    const forward = plans.plan(makeSnapshot([{ id: 1, parent: null }]), 'k', 'list', '?order=random', treeScope, parseQueryParams('order=random'))
    expect(forward.store).toBe(false)
    expect(plans.answered(forward)).toBeUndefined()
  })
})
