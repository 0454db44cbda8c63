/**
 * Decides whether cms-shield answered a request as the CMS did. Pure: two answers in, a verdict
 * out. What is compared, and why the rest is not:
 * - the status;
 * - the headers a client acts on: Content-Type, Allow, Vary, Location (with the CMS's API base
 *   rewritten to the shield's), WWW-Authenticate, and Retry-After (the shield must not add one);
 *   Date, Server, Connection, Content-Length (the rewritten URLs change it), the CMS's middleware
 *   headers and the caching headers cms-shield adds are not the API's contract;
 * - the body as a JSON value with its members in order, each `meta.detail_url` of the CMS moved to
 *   the shield's base first; other bodies byte for byte; HEAD answers have none.
 * @module
 */
import { canonicalJson, firstDifference, JsonSyntaxError, member, parseOrderedJson, type JsonValue } from './ordered-json.js'
import type { Answer, Bases, Exchange, VerifyRequest, Verdict } from './types.js'

const COMPARED_HEADERS = ['content-type', 'allow', 'vary', 'location', 'www-authenticate', 'retry-after'] as const

/** A CMS URL moved to the shield's base; other URLs (another host, html_url) are left alone. */
export function rebase(url: string, bases: Bases): string {
  return url.startsWith(bases.cms) ? bases.shield + url.slice(bases.cms.length) : url
}

/** Wagtail writes `detail_url` inside `meta` objects only; a StreamField block's own key is content. */
export function rebaseDetailUrls(value: JsonValue, bases: Bases, inMeta = false): JsonValue {
  if (value.t === 'array') return { t: 'array', items: value.items.map((item) => rebaseDetailUrls(item, bases)) }
  if (value.t !== 'object') return value
  return {
    t: 'object',
    entries: value.entries.map(([key, child]) => {
      if (inMeta && key === 'detail_url' && child.t === 'string') return [key, { t: 'string', v: rebase(child.v, bases) }] as const
      return [key, rebaseDetailUrls(child, bases, key === 'meta')] as const
    }),
  }
}

/** cms-shield never reads sessions, so it never varies on Cookie (docs/wagtail-compatibility.md#deliberate-differences). */
function varyTokens(value: string | undefined): string {
  if (value === undefined) return '(none)'
  return value
    .split(',')
    .map((token) => token.trim())
    .filter((token) => token !== '' && token.toLowerCase() !== 'cookie')
    .join(', ')
}

function queryOf(target: string): URLSearchParams {
  const q = target.indexOf('?')
  return new URLSearchParams(q < 0 ? '' : target.slice(q + 1))
}

function mediaType(answer: Answer): string {
  return (answer.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase()
}

function parseJson(answer: Answer): JsonValue | undefined {
  if (mediaType(answer) !== 'application/json') return undefined
  try {
    return parseOrderedJson(answer.body.toString('utf8'))
  } catch (error) {
    if (error instanceof JsonSyntaxError) return undefined
    throw error
  }
}

const quote = (value: string | undefined): string => (value === undefined ? '(none)' : JSON.stringify(value.length > 120 ? `${value.slice(0, 117)}...` : value))

function differ(group: string, note: string): Verdict {
  return { outcome: 'differ', notes: [note], group }
}

function compareHeaders(request: VerifyRequest, cms: Answer, shield: Answer, bases: Bases): Verdict | undefined {
  for (const name of COMPARED_HEADERS) {
    let theirs = cms.headers[name]
    let ours = shield.headers[name]
    if (name === 'vary') {
      theirs = varyTokens(theirs)
      ours = varyTokens(ours)
    }
    if (name === 'location' && theirs !== undefined) theirs = rebase(theirs, bases)
    if (theirs !== ours) return differ(`header ${name}`, `${request.method} ${name}: cms ${quote(theirs)}, shield ${quote(ours)}`)
  }
  return undefined
}

/** A value with its leaves replaced by their kinds: what `order=random` keeps equal on both sides. */
function shapeOf(value: JsonValue): string {
  switch (value.t) {
    case 'object':
      return `{${value.entries.map(([key, child]) => `${JSON.stringify(key)}:${shapeOf(child)}`).join(',')}}`
    case 'array':
      return `[${value.items.map(shapeOf).join(',')}]`
    default:
      return value.t
  }
}

/**
 * `order=random` draws another order (and, below total_count, other items) on every request:
 * compare everything but `items`, the number of items and the multiset of their shapes; and when
 * the page holds every item, the multiset of the items themselves.
 */
function compareRandomOrder(cms: JsonValue, shield: JsonValue): Verdict | undefined {
  const withoutItems = (value: JsonValue): JsonValue =>
    value.t === 'object' ? { t: 'object', entries: value.entries.filter(([key]) => key !== 'items') } : value
  const rest = firstDifference(withoutItems(cms), withoutItems(shield))
  if (rest) return differ(`body ${rest.path}`, `body (order=random) ${rest.path}: ${rest.detail}`)
  const a = member(cms, 'items')
  const b = member(shield, 'items')
  if (a?.t !== 'array' || b?.t !== 'array') return undefined
  if (a.items.length !== b.items.length) return differ('body $.items', `body (order=random) $.items: ${a.items.length} items vs ${b.items.length}`)
  const total = member(member(cms, 'meta'), 'total_count')
  const everything = total?.t === 'number' && Number(total.v) === a.items.length
  const key = everything ? canonicalJson : shapeOf
  const sorted = (items: readonly JsonValue[]) => items.map(key).sort().join('\n')
  if (sorted(a.items) !== sorted(b.items)) {
    return differ('body $.items', `body (order=random) $.items: the ${everything ? 'items' : "items' shapes"} differ`)
  }
  return undefined
}

/** Differences docs/wagtail-compatibility.md lists as deliberate: counted apart, never as failures. */
function documented(request: VerifyRequest, cms: Answer, shield: Answer): Verdict | undefined {
  const shieldMessage = (() => {
    const body = parseJson(shield)
    const message = member(body, 'message')
    return message?.t === 'string' ? message.v : undefined
  })()
  const tooLong = request.method === 'HEAD' || shieldMessage?.startsWith('the query is too long to forward to the CMS')
  if (shield.status === 414 && tooLong) {
    return { outcome: 'documented', notes: ['cms-shield does not forward a query this long (414)'], group: 'documented: long query' }
  }
  // A 4xx of its own in the API's envelope, or (an offset past any integer) an empty page.
  const emptyPage = shield.status === 200 && member(parseJson(shield), 'items')?.t === 'array' && canonicalJson(member(parseJson(shield), 'items')!) === '[]'
  if (cms.status >= 500 && ((shield.status >= 400 && shield.status < 500) || emptyPage || (request.method === 'HEAD' && shield.status < 500))) {
    return {
      outcome: 'documented',
      notes: [`the CMS answered ${cms.status}; cms-shield answers this input itself with ${shield.status}`],
      group: `documented: CMS ${cms.status}`,
    }
  }
  // Wagtail's browsable API (format=api, Accept: text/html) is HTML; cms-shield has none and answers JSON.
  const asksForHtml = queryOf(request.target).getAll('format').at(-1) === 'api' || (request.accept ?? '').includes('text/html')
  if (asksForHtml && cms.status === shield.status && mediaType(cms) === 'text/html' && mediaType(shield) === 'application/json') {
    return { outcome: 'documented', notes: ['the CMS answered its browsable API (HTML); cms-shield answers JSON'], group: 'documented: browsable API' }
  }
  return undefined
}

export function compareExchanges(request: VerifyRequest, cmsExchange: Exchange, shieldExchange: Exchange, bases: Bases): Verdict {
  if (!cmsExchange.ok || !shieldExchange.ok) {
    const notes = [cmsExchange.ok ? '' : `cms: ${cmsExchange.error}`, shieldExchange.ok ? '' : `shield: ${shieldExchange.error}`].filter(Boolean)
    return { outcome: 'failed', notes, group: 'no answer' }
  }
  const cms = cmsExchange.answer
  const shield = shieldExchange.answer
  const refused = (shield.status === 429 || shield.status === 503) && shield.headers['retry-after'] !== undefined
  if (refused && cms.status !== shield.status) {
    return { outcome: 'over-budget', notes: [`shield ${shield.status} Retry-After: ${shield.headers['retry-after']}`], group: 'over budget' }
  }
  const known = documented(request, cms, shield)
  if (known) return known
  if (cms.status !== shield.status) {
    const detail = (answer: Answer) => `${answer.status} ${answer.body.toString('utf8', 0, 160).replace(/\s+/g, ' ').trim()}`
    return differ('status', `status: cms ${detail(cms)} | shield ${detail(shield)}`)
  }
  const headers = compareHeaders(request, cms, shield, bases)
  if (headers) return headers
  if (request.method === 'HEAD') return { outcome: 'identical', notes: [] }
  const theirs = parseJson(cms)
  const ours = parseJson(shield)
  if (theirs !== undefined && ours !== undefined) {
    const rebased = rebaseDetailUrls(theirs, bases)
    const order = queryOf(request.target).getAll('order').at(-1)
    if (order === 'random' && cms.status === 200) {
      return compareRandomOrder(rebased, ours) ?? { outcome: 'identical', notes: [] }
    }
    const found = firstDifference(rebased, ours)
    return found ? differ(`body ${found.path.replace(/\[\d+\]/g, '[]')}`, `body ${found.path}: ${found.detail}`) : { outcome: 'identical', notes: [] }
  }
  if (!cms.body.equals(shield.body)) {
    const what = theirs === undefined && ours === undefined ? 'bytes differ' : `JSON on one side only`
    return differ('body bytes', `body: ${what} (${cms.body.length} vs ${shield.body.length} bytes)`)
  }
  return { outcome: 'identical', notes: [] }
}
