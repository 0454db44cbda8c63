import { describe, expect, it } from 'vitest'
import { parseJsonSpans, type ObjectNode } from './json-spans.js'
import { selectMembers, type MemberSelection } from './select-members.js'

const detail = JSON.stringify({ id: 4, meta: { type: 'home.BlogPage', alias_of: { id: 5, meta: { type: 'home.BlogPage', html_url: '/a/' }, title: 'A' }, parent: null }, title: 'T', n: 1.0 }, null, 4)
  .replace('"n": 1', '"n": 1.0')
const select = (selection: MemberSelection) => selectMembers(detail, parseJsonSpans(detail) as ObjectNode, selection)

describe('selecting members of a detail', () => {
  it('keeps the chosen members\' bytes and the layout of their depth', () => {
    expect(select(new Map([['id', true], ['n', true]]))).toBe('{\n    "id": 4,\n    "n": 1.0\n}')
    const nested = new Map<string, true | MemberSelection>([['meta', new Map<string, true | MemberSelection>([['alias_of', new Map([['title', true]])]])]])
    expect(select(nested)).toBe('{\n    "meta": {\n        "alias_of": {\n            "title": "A"\n        }\n    }\n}')
  })

  it('gives {} for nothing kept, and the same bytes for everything kept', () => {
    expect(select(new Map())).toBe('{}')
    const all = new Map<string, true>((parseJsonSpans(detail) as ObjectNode).entries.map((entry) => [entry.key, true]))
    expect(select(all)).toBe(detail)
  })

  it('keeps a member whole when its selection meets a value that is no object (a null relation)', () => {
    expect(select(new Map([['meta', new Map([['parent', new Map([['id', true]])]])]]))).toBe('{\n    "meta": {\n        "parent": null\n    }\n}')
  })
})
