/** A detail's fields read from its bytes (a tape) are those read from its text (spans), and a bad one is refused with the same message. */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { parseJsonSpans } from '../json/json-spans.js'
import { JsonTape } from '../json/json-tape.js'
import { readDetail, readTapeDetail } from './read-page-fields.js'

function outcome(read: () => unknown): unknown {
  try {
    return { ok: read() }
  } catch (error) {
    return { failed: (error as Error).message }
  }
}

const value = fc.oneof(fc.string({ unit: 'grapheme', maxLength: 8 }), fc.integer(), fc.constant(null), fc.boolean(), fc.constant(1.5), fc.constant(2 ** 60))
const detail = fc.record(
  {
    id: value,
    meta: fc.record(
      {
        type: value,
        detail_url: fc.constant('http://cms/api/v1/cms/pages/1/'),
        html_url: value,
        slug: value,
        show_in_menus: value,
        seo_title: value,
        search_description: value,
        parent: fc.option(fc.record({ id: value }, { requiredKeys: [] })),
      },
      { requiredKeys: [] },
    ),
    title: value,
  },
  { requiredKeys: [] },
)

describe('readTapeDetail', () => {
  it('reads what readDetail reads, and refuses what it refuses with the same message', () => {
    const tape = new JsonTape()
    fc.assert(
      fc.property(fc.oneof(detail, value), (body) => {
        const text = JSON.stringify(body, null, 4)
        expect(outcome(() => readTapeDetail(tape.parse(Buffer.from(text, 'utf8')), 'w'))).toEqual(outcome(() => readDetail(parseJsonSpans(text), 'w')))
      }),
      { numRuns: 1000 },
    )
  })
})
