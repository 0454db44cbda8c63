import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { JsonTape } from './json-tape.js'
import { createUrlRewriter, rewriteDetailUrls, type RewriteUrl } from './rewrite-detail-urls.js'
import { editedLength, findTapeDetailUrlEdits, writeEdited } from './tape-detail-urls.js'

const rewrite = createUrlRewriter({ baseUrl: 'https://shield.example', upstreamPathPrefix: '/cms' })

function rewriteBytes(text: string, rewriteUrl: RewriteUrl): Buffer {
  const bytes = Buffer.from(text, 'utf8')
  const tape = new JsonTape().parse(bytes)
  const edits = findTapeDetailUrlEdits(tape, rewriteUrl)
  const out = Buffer.alloc(editedLength(0, bytes.length, edits))
  expect(writeEdited(bytes, 0, bytes.length, edits, out)).toBe(out.length)
  return out
}

describe('findTapeDetailUrlEdits and writeEdited', () => {
  it('rewrite a body to the very bytes rewriteDetailUrls gives its text', () => {
    const url = fc.oneof(
      fc.webUrl({ withQueryParameters: true, withFragments: true }),
      fc.webPath().map((p) => `/cms/api/v1/cms${p}/`),
      fc.tuple(fc.webUrl(), fc.string({ unit: 'binary', maxLength: 6 })).map(([u, s]) => `${u}/cms/api/v1/cms/${s}/`),
      fc.string({ unit: 'binary', maxLength: 6 }).map((s) => `/api/v1/cms/pages/${s}\u2028/`),
    )
    const { doc } = fc.letrec<{ doc: unknown; meta: unknown }>((tie) => ({
      doc: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        fc.jsonValue({ maxDepth: 1 }),
        fc.array(tie('doc'), { maxLength: 4 }),
        fc.record({ id: fc.nat(), meta: tie('meta'), detail_url: url, other: tie('doc') }),
        fc.dictionary(fc.string({ maxLength: 3 }), tie('doc'), { maxKeys: 3 }),
      ),
      meta: fc.record({ detail_url: url, html_url: url, parent: tie('doc') }, { requiredKeys: ['detail_url'] }),
    }))
    const accented: RewriteUrl = (u) => {
      const out = rewrite(u)
      return out === undefined ? undefined : out + 'é'
    }
    fc.assert(
      fc.property(doc, fc.constantFrom<number | undefined>(undefined, 4), (value, indent) => {
        const input = JSON.stringify(value, null, indent)
        expect(rewriteBytes(input, accented).toString('utf8')).toBe(rewriteDetailUrls(input, accented).text)
      }),
      { numRuns: 300 },
    )
  })

  it('leave an escaped URL that does not change as it was written', () => {
    const input = '{"meta": {"detail_url": "https:\\/\\/elsewhere.example\\/x\\/"}, "body": "\\u00e9"}'
    expect(rewriteBytes(input, rewrite).toString('utf8')).toBe(input)
  })

  it('write a part of a body with the edits inside it', () => {
    const input = '[{"meta": {"detail_url": "http://cms/cms/api/v1/cms/pages/3/"}}, 1]'
    const bytes = Buffer.from(input)
    const tape = new JsonTape().parse(bytes)
    const item = 1
    const edits = findTapeDetailUrlEdits(tape, rewrite, item)
    const out = Buffer.alloc(editedLength(tape.start(item), tape.end(item), edits))
    writeEdited(bytes, tape.start(item), tape.end(item), edits, out)
    expect(out.toString()).toBe('{"meta": {"detail_url": "https://shield.example/api/v1/cms/pages/3/"}}')
  })
})
