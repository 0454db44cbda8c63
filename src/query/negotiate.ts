/**
 * DRF content negotiation, the first step of every pages view (docs/wagtail-compatibility.md#content-negotiation).
 *
 * cms-shield renders JSON only. `?format=api` and `Accept: text/html` ask Wagtail for the
 * Browsable API; the seed (docs/wagtail-compatibility.md#the-seed-the-production-api-as-observed) says `format=api` answers JSON with the same structure, so both get
 * JSON here. What DRF refuses, we refuse with its texts: an unknown `format` is a bare 404, an
 * Accept header that neither renderer satisfies is a 406.
 * @module
 */
import type { QueryParams } from './query-params.js'
import { wagtailErrors, type WagtailError } from './wagtail-messages.js'

type Renderer = readonly [main: string, sub: string]

const JSON_RENDERER: Renderer = ['application', 'json']
/** Wagtail's browsable API renderer: what DRF keeps for `?format=api` (cms-shield answers it JSON, as the seed does). */
const HTML_RENDERER: Renderer = ['text', 'html']
const ALL_RENDERERS: readonly Renderer[] = [JSON_RENDERER, HTML_RENDERER]

/**
 * DRF's media type matching of a renderer against the Accept header: wildcards on either part,
 * parameters (q included) ignored.
 */
function acceptable(accept: string, renderers: readonly Renderer[]): boolean {
  for (const range of accept.split(',')) {
    const [type = ''] = range.split(';')
    const [main = '', sub = ''] = type.trim().toLowerCase().split('/')
    for (const [rMain, rSub] of renderers) {
      if ((main === '*' || main === rMain) && (sub === '*' || sub === rSub)) return true
    }
  }
  return false
}

/**
 * `?format=` first keeps only that format's renderer (an unknown one is a bare 404); then the
 * Accept header must be satisfied by one of the renderers left, else 406. So `format=json` with
 * `Accept: application/xml` is a 406, and `format=api` with `Accept: application/json` too: the
 * browsable renderer serves only text/html. Both come before any validation of the query.
 */
export function negotiate(params: QueryParams, accept: string | undefined, notAcceptable: WagtailError = wagtailErrors.notAcceptable): WagtailError | undefined {
  const format = params.get('format')
  let renderers = ALL_RENDERERS
  // DRF's `if format:`: an empty `?format=` filters nothing and negotiation goes on.
  if (format !== undefined && format !== '') {
    if (format === 'json') renderers = [JSON_RENDERER]
    else if (format === 'api') renderers = [HTML_RENDERER]
    else return wagtailErrors.unknownFormat
  }
  if (accept === undefined || accept.trim() === '') return undefined
  return acceptable(accept, renderers) ? undefined : notAcceptable
}
