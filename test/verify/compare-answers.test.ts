import { describe, expect, it } from 'vitest'
import { compareExchanges, rebase } from '../../scripts/verify/compare-answers.js'
import type { Answer, Exchange, Method, VerifyRequest } from '../../scripts/verify/types.js'

const bases = { cms: 'http://cms.internal', shield: 'https://api.example' }
const API = '/api/v1/cms/pages/'

function req(target: string, method: Method = 'GET', accept?: string): VerifyRequest {
  return { n: 0, method, view: 'listing', target, kind: 'test', ...(accept === undefined ? {} : { accept }) }
}

function answer(status: number, body: unknown, headers: Record<string, string> = {}): Exchange {
  const text = typeof body === 'string' ? body : JSON.stringify(body, null, 4)
  const a: Answer = { status, headers: { 'content-type': 'application/json', allow: 'GET, HEAD, OPTIONS', vary: 'Accept', ...headers }, body: Buffer.from(text) }
  return { ok: true, answer: a }
}

const item = (base: string, id: number) => ({ id, meta: { type: 'cms.Page', detail_url: `${base}${API}${id}/`, html_url: 'https://www.example/' }, title: 'T' })
const listing = (base: string, ids: number[], total = ids.length) => ({ meta: { total_count: total }, items: ids.map((id) => item(base, id)) })

describe('compareExchanges', () => {
  it('takes answers that differ only in the detail_url base and the headers cms-shield adds for identical', () => {
    const cms = answer(200, listing(bases.cms, [1, 2]), { vary: 'Accept, Cookie', server: 'gunicorn', 'x-frame-options': 'DENY', date: 'x' })
    const shield = answer(200, listing(bases.shield, [1, 2]), { etag: '"x"', 'cache-status': 'cms-shield; hit', 'cache-control': 'public', 'x-request-id': '1', age: '0' })
    expect(compareExchanges(req(`${API}?limit=2`), cms, shield, bases)).toEqual({ outcome: 'identical', notes: [] })
  })

  it('finds another key order, though the JSON values are equal', () => {
    const shield = answer(200, '{"items": [], "meta": {"total_count": 0}}')
    const verdict = compareExchanges(req(API), answer(200, listing(bases.cms, [], 0)), shield, bases)
    expect(verdict.outcome).toBe('differ')
    expect(verdict.notes).toEqual(['body $: keys [meta, items] vs [items, meta]'])
  })

  it('rewrites detail_url only inside meta: a StreamField block keeping the CMS address must be kept', () => {
    const block = (base: string) => ({ id: 1, meta: { detail_url: `${base}${API}1/` }, body: [{ detail_url: `${base}/x/` }] })
    expect(compareExchanges(req(`${API}1/`), answer(200, block(bases.cms)), answer(200, block(bases.shield)), bases).outcome).toBe('differ')
    const kept = { id: 1, meta: { detail_url: `${bases.shield}${API}1/` }, body: [{ detail_url: `${bases.cms}/x/` }] }
    expect(compareExchanges(req(`${API}1/`), answer(200, block(bases.cms)), answer(200, kept), bases).outcome).toBe('identical')
  })

  it('compares status, Content-Type, Allow, Vary (but Cookie), Location rebased and Retry-After', () => {
    const cms = answer(200, {})
    const cases: [Record<string, string>, string][] = [
      [{ 'content-type': 'application/json; charset=utf-8' }, 'header content-type'],
      [{ allow: 'GET' }, 'header allow'],
      [{ vary: 'Accept, Origin' }, 'header vary'],
      [{ 'retry-after': '1' }, 'header retry-after'],
    ]
    for (const [headers, group] of cases) expect(compareExchanges(req(API), cms, answer(200, {}, headers), bases).group).toBe(group)
    expect(compareExchanges(req(API), cms, answer(404, {}), bases).group).toBe('status')
    const found = (base: string) => answer(302, '', { location: `${base}${API}2/?`, 'content-type': 'text/html; charset=utf-8' })
    expect(compareExchanges(req(`${API}find/?html_path=/`), found(bases.cms), found(bases.shield), bases).outcome).toBe('identical')
    expect(compareExchanges(req(`${API}find/?html_path=/`), found(bases.cms), found('https://elsewhere'), bases).group).toBe('header location')
  })

  it('compares HEAD by status and headers only', () => {
    const verdict = compareExchanges(req(API, 'HEAD'), answer(200, ''), answer(200, ''), bases)
    expect(verdict.outcome).toBe('identical')
  })

  it('compares other bodies byte for byte', () => {
    const html = (text: string) => answer(404, text, { 'content-type': 'text/html' })
    expect(compareExchanges(req('/x'), html('<h1>Not Found</h1>'), html('<h1>Not Found</h1>'), bases).outcome).toBe('identical')
    expect(compareExchanges(req('/x'), html('<h1>Not Found</h1>'), html('<h1>Not found</h1>'), bases).group).toBe('body bytes')
  })

  it('puts a shield refusing over its budget apart, unless the CMS refused too', () => {
    const refused = answer(429, { message: 'slow down' }, { 'retry-after': '2' })
    expect(compareExchanges(req(`${API}?search=a`), answer(200, {}), refused, bases).outcome).toBe('over-budget')
    expect(compareExchanges(req(`${API}?search=a`), answer(200, {}), answer(503, {}, { 'retry-after': '1' }), bases).outcome).toBe('over-budget')
    expect(compareExchanges(req(`${API}?search=a`), answer(429, { message: 'slow down' }, { 'retry-after': '2' }), refused, bases).outcome).toBe('identical')
  })

  it("takes README's deliberate differences for documented: a CMS 500, a query too long to forward, the browsable API", () => {
    const html500 = answer(500, '<h1>Server Error (500)</h1>', { 'content-type': 'text/html' })
    expect(compareExchanges(req(`${API}?site=nope`), html500, answer(404, { message: 'No Site matches the given query.' }), bases).outcome).toBe('documented')
    expect(compareExchanges(req(`${API}?search=xx`), answer(200, {}), answer(414, { message: 'the query is too long to forward to the CMS (3100 bytes)' }), bases).outcome).toBe('documented')
    const browsable = answer(200, '<html>', { 'content-type': 'text/html; charset=utf-8' })
    expect(compareExchanges(req(`${API}?format=api`), browsable, answer(200, {}), bases).outcome).toBe('documented')
    // A 414 that names something else is a difference.
    expect(compareExchanges(req(API), answer(200, {}), answer(414, { message: 'no' }), bases).outcome).toBe('differ')
  })

  it('compares order=random by everything but the order of the items', () => {
    const shuffled = answer(200, listing(bases.shield, [2, 1]))
    expect(compareExchanges(req(`${API}?order=random`), answer(200, listing(bases.cms, [1, 2])), shuffled, bases).outcome).toBe('identical')
    // With every item on the page, the items themselves must match.
    expect(compareExchanges(req(`${API}?order=random`), answer(200, listing(bases.cms, [1, 2])), answer(200, listing(bases.shield, [2, 3])), bases).outcome).toBe('differ')
    // Below total_count other items may be drawn: only their shapes must match.
    expect(compareExchanges(req(`${API}?order=random&limit=2`), answer(200, listing(bases.cms, [1, 2], 9)), answer(200, listing(bases.shield, [5, 3], 9)), bases).outcome).toBe('identical')
    expect(compareExchanges(req(`${API}?order=random&limit=2`), answer(200, listing(bases.cms, [1, 2], 9)), answer(200, listing(bases.shield, [5], 9)), bases).outcome).toBe('differ')
  })

  it('reports a side that gave no answer as failed', () => {
    const verdict = compareExchanges(req(API), { ok: false, error: 'no answer within 10 ms' }, answer(200, {}), bases)
    expect(verdict).toEqual({ outcome: 'failed', notes: ['cms: no answer within 10 ms'], group: 'no answer' })
  })

  it('rebases only URLs on the CMS base', () => {
    expect(rebase(`${bases.cms}${API}3/`, bases)).toBe(`${bases.shield}${API}3/`)
    expect(rebase('https://www.example/page/', bases)).toBe('https://www.example/page/')
  })
})
