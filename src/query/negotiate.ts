/**
 * DRF content negotiation, the first step of every pages view (spec §1, §6.5).
 *
 * cms-shield renders JSON only. `?format=api` and `Accept: text/html` ask Wagtail for the
 * Browsable API; the seed says `format=api` answers JSON with the same structure, so both get
 * JSON here. What DRF refuses, we refuse with its texts: an unknown `format` is a bare 404, an
 * Accept header that neither renderer satisfies is a 406.
 * @module
 */
import type { QueryParams } from './query-params.js'
import { wagtailErrors, type WagtailError } from './wagtail-messages.js'

const RENDERERS = [
  ['application', 'json'],
  ['text', 'html'],
] as const

/** DRF's media type matching: wildcards on either part, parameters (q included) ignored. */
function acceptable(accept: string): boolean {
  for (const range of accept.split(',')) {
    const [type = ''] = range.split(';')
    const [main = '', sub = ''] = type.trim().toLowerCase().split('/')
    for (const [rMain, rSub] of RENDERERS) {
      if ((main === '*' || main === rMain) && (sub === '*' || sub === rSub)) return true
    }
  }
  return false
}

export function negotiate(params: QueryParams, accept: string | undefined): WagtailError | undefined {
  const format = params.get('format')
  // DRF's `if format:`: an empty `?format=` filters nothing and negotiation goes on.
  if (format !== undefined && format !== '') {
    return format === 'json' || format === 'api' ? undefined : wagtailErrors.unknownFormat
  }
  if (accept === undefined || accept.trim() === '') return undefined
  return acceptable(accept) ? undefined : wagtailErrors.notAcceptable
}
