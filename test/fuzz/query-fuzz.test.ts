/**
 * Fuzzing the three pages views through `inject`: query strings with repeated
 * keys, odd and broken percent-encodings, huge values, Unicode and NUL, against one cms-shield and
 * the fake Wagtail 7.4.3 it fronts. For every request: never a 5xx, an answer of the right shape,
 * and — where the fake is faithful — exactly the CMS's status and body (detail_urls rewritten).
 * Where Wagtail 7.x answers an HTML 500 (docs/wagtail-compatibility.md#inputs-wagtail-answers-with-a-500) cms-shield must answer a 4xx of its own.
 * The CMS is asked at most once per distinct forwarded query: garbage is not forwarded en masse.
 *
 * The clock is frozen, so no read-through entry expires during the run.
 */
import { request as httpRequest } from 'node:http'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseQueryParams } from '../../src/query/query-params.js'
import { SEED_PAGE_TYPES, type FakePage } from '../fake-wagtail/index.js'
import { asServedByShield, BASE_URL, startShield, type Harness } from '../helpers/start-shield.js'

/** Fixed, so a run is reproducible; FUZZ_SEED explores others (a failure prints its seed and path). */
const SEED = Number(process.env['FUZZ_SEED'] ?? 20_240_507)
const RUNS = 300
const API = '/api/v1/cms/pages/'
/** Marks the oracle's own requests to the fake, so they are not counted as cms-shield's. */
const ORACLE = 'x-fuzz-oracle'

let h: Harness
let pages: FakePage[]

beforeAll(async () => {
  // Load shedding is a deliberate 503 under pressure, not an answer to input: off for this run.
  h = await startShield({ env: { LOAD_SHED_EVENT_LOOP_DELAY: '0' }, deps: { now: () => 1_700_000_000_000 } })
  pages = h.origin.pages()
  h.origin.resetHits()
})
afterAll(async () => {
  await h.close()
})

interface Seen {
  readonly status: number
  readonly headers: Record<string, string | string[] | undefined>
  readonly body: string
}

/** The fake's own answer to the same raw target (node:http sends the target as given). */
function askFake(target: string): Promise<Seen> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${h.origin.url}${target}`, { headers: { [ORACLE]: '1' } }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }))
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end()
  })
}

async function askShield(target: string, headers: Record<string, string> = {}): Promise<Seen> {
  const response = await h.app.inject({ method: 'GET', url: target, headers })
  return { status: response.statusCode, headers: response.headers as Seen['headers'], body: response.body }
}

// ---------------------------------------------------------------------------------------------
// Query strings
// ---------------------------------------------------------------------------------------------

const UNRESERVED = /^[A-Za-z0-9\-_.~,:/()*!]$/

/** Percent-encodes the UTF-8 of `text` except characters that are safe raw in a query. */
function enc(text: string): string {
  let out = ''
  for (const ch of text) {
    if (UNRESERVED.test(ch)) out += ch
    else for (const byte of new TextEncoder().encode(ch)) out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`
  }
  return out
}

/** Raw fragments a client may send: broken escapes, bytes that are not UTF-8, `+`, NUL, U+2028. */
const ODD = ['%', '%z', '%zz', '%ff%fe', '+', '%2B', '%00', '%C3%BC', '%E2%80%A8', '%2C', '%26', '%3D', '%25', '%C3', '%ED%A0%80']

const INTS = ['0', '1', '3', ' 3 ', '+2', '1_0', '٣', '-1', '', 'abc', '1.5', '20', '21', '250', '251',
  '99999999999999999999', '9223372036854775807', '9223372036854775808']

function pools(): Record<string, readonly string[]> {
  const ids = pages.slice(0, 6).map((page) => String(page.id))
  const titles = pages.slice(0, 4).map((page) => page.title)
  const slugs = pages.slice(0, 4).map((page) => page.slug)
  return {
    limit: INTS, offset: INTS,
    child_of: [...ids, ...INTS, 'root'], descendant_of: [...ids, ...INTS, 'root'], ancestor_of: [...ids, ...INTS, 'root'],
    translation_of: [...ids, 'abc', '999999'], id: [...ids, ...INTS], alias_of: [...ids, 'abc', ''],
    type: [...SEED_PAGE_TYPES, 'cms.genericpage', 'nope', 'nope.Nope', 'a.b.c', 'wagtailcore.Page', '', '.x', 'cms.GenericPage,cms.LandingPage'],
    order: ['title', '-title', 'id', '-id', 'slug', 'foo', '-foo', '', 'type', 'title,-id', 'first_published_at', 'show_in_menus'],
    fields: ['_,id', '*', 'foo', 'title(a)', '-title', '', '_', '*,-title', 'id,', ' id', 'parent', 'intro', '-abc', 'title)', '*,foo'],
    search: ['blog', 'Health', 'ü ☃', 'a b', 'x'],
    search_operator: ['and', 'or', 'xor', 'x y'],
    site: ['localhost', 'localhost:80', 'localhost:abc', 'localhost:', '', 'a\u0000b', 'h'.repeat(300), ':', ':80', 'localhost: 80 '],
    first_published_at: ['abc', '2024-13-01', '2024-01-01T25:00', '2024-05-06', '2024-05-06T07:08:09Z', '', '٢٠٢٤-٠٥-٠٦', '2024-5-6 1:2'],
    locale: ['en', 'xx', ''],
    show_in_menus: ['true', 'false', '1', '0', 'True', 'abc', ''],
    title: [...titles, '', 'nomatch'], slug: [...slugs, 'nope'], seo_title: [''], search_description: [''],
    format: ['json', 'api', 'xml', ''], _: ['1', ''],
  }
}

const JUNK_KEYS = ['foo', 'LIMIT', '', 'ü', 'a\u0000', 'rich_text_format', 'date', 'intro', 'sort_order', 'html_path']

/** One `key=value` field: pooled or arbitrary values, optionally without `=`, sometimes raw odd bytes. */
function field(keys: readonly string[]): fc.Arbitrary<string> {
  const values = pools()
  const key = fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...keys) }, { weight: 1, arbitrary: fc.constantFrom(...JUNK_KEYS) })
  return key.chain((k) => {
    const pooled = values[k] ?? ['1', 'abc', '']
    const value = fc.oneof(
      { weight: 6, arbitrary: fc.constantFrom(...pooled).map(enc) },
      { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 12 }).map(enc) },
      { weight: 1, arbitrary: fc.array(fc.constantFrom(...ODD, 'a', '1', '-'), { maxLength: 5 }).map((parts) => parts.join('')) },
      { weight: 1, arbitrary: fc.constantFrom(1000, 3100, 6000).map((n) => 'x'.repeat(n)) },
    )
    return fc.tuple(value, fc.nat(9)).map(([v, roll]) => (roll === 0 ? enc(k) : `${enc(k)}=${v}`))
  })
}

function queryString(keys: readonly string[]): fc.Arbitrary<string> {
  return fc
    .tuple(fc.array(field(keys), { maxLength: 6 }), fc.constantFrom('&', '&', '&', '&&'))
    .map(([fields, separator]) => fields.join(separator))
}

const LISTING_KEYS = ['limit', 'offset', 'fields', 'order', 'search', 'search_operator', '_', 'format', 'type', 'child_of',
  'ancestor_of', 'descendant_of', 'translation_of', 'locale', 'site', 'id', 'title', 'slug', 'show_in_menus', 'seo_title',
  'search_description', 'first_published_at', 'alias_of']
const FIND_KEYS = ['html_path', 'id', 'type', 'site', 'fields', 'format', 'foo']

// ---------------------------------------------------------------------------------------------
// The oracle
// ---------------------------------------------------------------------------------------------

/** Messages cms-shield gives in place of a CMS 500 (forward-guard.ts, plan-steps.ts). */
const LOCAL_ONLY = [
  /^search_operator must be either 'or' or 'and'$/,
  /^Field 'port' expected a number but got .*\.$/s,
  /^No Site matches the given query\.$/,
  /^the query is too long to forward to the CMS /,
  /^field filter error\. '.*' is not a valid value for first_published_at \(“/s,
]

const isLocalOnly = (message: unknown) => typeof message === 'string' && LOCAL_ONLY.some((re) => re.test(message))

/** Django's `QueryDict` view of the target's query (cms-shield's own parser, unit-tested against Django's semantics, docs/wagtail-compatibility.md#query-string-semantics). */
function queryOf(target: string) {
  const q = target.indexOf('?')
  if (q < 0) return parseQueryParams('')
  const hash = target.indexOf('#', q)
  return parseQueryParams(hash < 0 ? target.slice(q + 1) : target.slice(q + 1, hash))
}

/**
 * Inputs that cms-shield forwards and the fake CMS may answer with a 500, where the client must
 * still get a 4xx (pages-service.ts blames the input when a healthy CMS fails on a value only it
 * can judge) or the CMS's own answer:
 * - `site=<a host:port the fake has no Site for>`: Wagtail 7.x 500, 8.0 404;
 * - find/ with `format=api`, or with html_path and a non-numeric id;
 * - a `first_published_at` only Python 3.11+'s `fromisoformat` can parse (`20240506`), or written
 *   with non-ASCII digits (a date to Django's `\\d`): the fake knows Django's regexes on ASCII only.
 */
function mayFailUpstream(target: string, view: View): boolean {
  const query = queryOf(target)
  const site = query.get('site')
  if (site !== undefined && site !== '' && !site.includes('\u0000')) {
    const colon = site.indexOf(':')
    const host = colon < 0 ? site : site.slice(0, colon)
    const port = colon < 0 ? '80' : site.slice(colon + 1).trim()
    if (host !== '' && [...host].length <= 255 && /^[0-9]+$/.test(port) && !(host === 'localhost' && Number(port) === 80)) return true
  }
  if (view === 'find' && query.get('format') === 'api') return true
  // find/ forwarded with html_path and a non-numeric id: the CMS routes the path, then may fall
  // back to `queryset.get(id='abc')` (500). Needs pages-service.ts to drop such an id (see report).
  const id = query.get('id')
  if (view === 'find' && query.has('html_path') && id !== undefined && !/^\s*[+-]?[0-9_]+\s*$/.test(id)) return true
  const search = query.get('search')
  const operator = query.get('search_operator')
  if (view !== 'find' && search !== undefined && operator !== undefined && operator !== 'and' && operator !== 'or') {
    if (search === '' || operator === '' || ['and', 'or'].includes(operator.toLowerCase())) return true
  }
  const date = query.get('first_published_at')
  if (view !== 'find' && date !== undefined) {
    if (/^[0-9]{4}/.test(date) && !/^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}([T ][0-9]{1,2}:[0-9]{1,2}.*)?\n?$/s.test(date)) return true
    if (/[^\P{Nd}0-9]/u.test(date)) return true
  }
  return false
}

/** Where the fake's text differs from Wagtail's: CPython cuts int()'s repr at 200 (`%.200R`), the fake does not. */
function fakeTextDiffers(target: string): boolean {
  const id = queryOf(target).get('id')
  return id !== undefined && id.length > 150
}

type View = 'listing' | 'detail' | 'find'

function parseJson(text: string): unknown {
  return text === '' ? undefined : JSON.parse(text)
}

/** The shape every API answer must have, whatever the input. */
function expectWellFormed(target: string, ours: Seen): void {
  expect(ours.status, target).toBeLessThan(500)
  const type = String(ours.headers['content-type'] ?? '')
  if (ours.status === 301) {
    expect(ours.body, target).toBe('')
    expect(String(ours.headers['location']), target).toMatch(/^\//)
    return
  }
  if (ours.status === 302) {
    expect(ours.body, target).toBe('')
    expect(String(ours.headers['location']), target).toMatch(new RegExp(`^${BASE_URL}${API}[0-9]+/`))
    return
  }
  expect(type, target).toBe('application/json')
  const body = parseJson(ours.body)
  if (ours.status === 400 || ours.status === 414) {
    expect(Object.keys(body as object), target).toEqual(['message'])
    expect(typeof (body as { message: unknown }).message, target).toBe('string')
  }
}

/** The answer must be the CMS's (rewritten), or a local 4xx where the CMS would fail. */
async function expectLikeWagtail(target: string, view: View): Promise<void> {
  const ours = await askShield(target)
  const label = target.length > 300 ? `${target.slice(0, 300)}… (${target.length} chars)` : target
  if (mayFailUpstream(target, view)) {
    // Whatever the CMS says (it may answer 500 here), the client gets a 4xx or the CMS's answer,
    // in the API's shape: a healthy CMS's 500 on a forwarded query is the input's fault.
    expect(ours.status, `${label} → ${ours.body.slice(0, 200)}`).toBeLessThan(500)
    return expectWellFormed(label, ours)
  }
  expectWellFormed(label, ours)
  if (fakeTextDiffers(target)) return
  const cms = await askFake(target)
  const message = ours.status >= 400 ? (parseJson(ours.body) as { message?: unknown } | undefined)?.message : undefined
  if (cms.status >= 500 || isLocalOnly(message)) {
    // Wagtail fails (or would fail first) where cms-shield decides itself: a 4xx in the JSON envelope.
    expect([200, 400, 404, 414], label).toContain(ours.status)
    // find/?id=abc: cms-shield's chosen answer is find's own "not found" (plan-find.ts).
    const findsNothing = view === 'find' && ours.status === 404 && message === 'not found'
    // Existing choice (index-fidelity.test.ts): an offset past any integer is an empty page.
    const pastTheEnd = view === 'listing' && ours.status === 200 && cms.status === 500
    expect(isLocalOnly(message) || findsNothing || pastTheEnd, `${label} → ${ours.body.slice(0, 200)}`).toBe(true)
    if (pastTheEnd) expect((parseJson(ours.body) as { items: unknown[] }).items, label).toEqual([])
    return
  }
  expect(ours.status, `${label} → ${ours.body.slice(0, 200)}`).toBe(cms.status)
  if (cms.status === 301 || cms.status === 302) {
    expect(ours.headers['location'], label).toBe(asServedByShield(String(cms.headers['location'])))
    return
  }
  expect(parseJson(ours.body), label).toEqual(parseJson(asServedByShield(cms.body)))
}

const property = (arbitrary: fc.Arbitrary<string>, view: View) =>
  fc.assert(fc.asyncProperty(arbitrary, (target) => expectLikeWagtail(target, view)), { seed: SEED, numRuns: RUNS, endOnFailure: true })

describe('fuzzed query strings (inject)', () => {
  it('the listing answers like Wagtail, or a 4xx of its own where Wagtail fails, and never a 5xx', async () => {
    await property(queryString(LISTING_KEYS).map((query) => `${API}?${query}`), 'listing')
  })

  it('the detail view does the same for any id the route takes (leading zeros, huge, 0)', async () => {
    const ids = fc.oneof(
      fc.constantFrom(...pages.slice(0, 8).map((page) => String(page.id))),
      fc.constantFrom('0', '1', '999999', '9'.repeat(25), '9223372036854775808'),
      fc.constantFrom(...pages.slice(0, 3).map((page) => `000${page.id}`)),
    )
    await property(fc.tuple(ids, queryString(LISTING_KEYS)).map(([id, query]) => `${API}${id}/?${query}`), 'detail')
  })

  it('find/ does the same for html_path and id, known or not', async () => {
    const paths = pathsOf(pages)
    const htmlPath = fc.constantFrom(...paths.slice(0, 6), '/nope/', '//', '', '/%00/', enc('/ü/'), `${paths[1]}nope/`)
    const query = fc
      .tuple(htmlPath, fc.option(fc.constantFrom(...pages.slice(0, 4).map((page) => String(page.id)), 'abc', '99999999999999999999', '')), queryString(FIND_KEYS))
      .map(([path, id, rest]) => [`html_path=${enc(path)}`, id === null ? '' : `id=${enc(id)}`, rest].filter((part) => part !== '').join('&'))
    await property(query.map((q) => `${API}find/?${q}`), 'find')
  })

  it('asked the CMS at most once per distinct forwarded query, and only on the pages API', () => {
    const forwarded = h.origin.requests.filter((request) => request.headers[ORACLE] === undefined)
    const counts = new Map<string, number>()
    for (const request of forwarded) counts.set(request.url, (counts.get(request.url) ?? 0) + 1)
    const repeated = [...counts].filter(([, count]) => count > 1)
    expect(repeated).toEqual([])
    for (const request of forwarded) {
      expect(request.method).toBe('GET')
      expect(request.url.startsWith(API)).toBe(true)
      expect(request.url.length).toBeLessThan(4096)
    }
    // Garbage stays local: only a small share of the fuzzed requests needed the CMS.
    expect(forwarded.length).toBeLessThan(RUNS * 3)
  })
})

/** html_path of every page below the site root, as find routes them. */
function pathsOf(all: readonly FakePage[]): string[] {
  const byId = new Map(all.map((page) => [page.id, page]))
  return all
    .filter((page) => page.parentId !== null)
    .map((page) => {
      const slugs: string[] = []
      for (let p: FakePage | undefined = page; p && p.parentId !== null; p = byId.get(p.parentId)) slugs.unshift(p.slug)
      return `/${slugs.join('/')}/`
    })
}
