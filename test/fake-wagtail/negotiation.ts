/**
 * DRF's `initial()` steps that run before the view (docs/wagtail-compatibility.md#content-negotiation): content negotiation (`?format=`, `Accept`)
 * and authentication (Session + Basic).
 *
 * The fake has no Browsable API: where DRF would pick it (`format=api`, `Accept: text/html`) the fake
 * still answers JSON, as the seed observed for `format=api` ("keeps Content-Type application/json").
 * @module
 */
import { ApiError } from './api-errors.js'
import { parsePyInt } from './python-semantics.js'
import { DEFAULT_INDENT } from './render.js'
import type { QueryDict } from './query-dict.js'

interface MediaType {
  readonly text: string
  readonly main: string
  readonly sub: string
  readonly params: ReadonlyMap<string, string>
}

/** Django's `parse_header_parameters`: type and parameter names lower-cased, values unquoted. */
function parseMediaType(text: string): MediaType {
  const [type = '', ...rawParams] = text.split(';')
  const params = new Map<string, string>()
  for (const raw of rawParams) {
    const eq = raw.indexOf('=')
    if (eq < 0) continue
    let value = raw.slice(eq + 1).trim()
    if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1)
    params.set(raw.slice(0, eq).trim().toLowerCase(), value)
  }
  const full = type.trim().toLowerCase()
  const slash = full.indexOf('/')
  return {
    text,
    main: slash < 0 ? full : full.slice(0, slash),
    sub: slash < 0 ? '' : full.slice(slash + 1),
    params,
  }
}

/** DRF `_MediaType.precedence`: 3 = with params, 2 = full type, 1 = `type/*`, 0 = `*\/*`. */
function precedence(media: MediaType): number {
  if (media.main === '*') return 0
  if (media.sub === '*') return 1
  const keys = [...media.params.keys()]
  return keys.length === 0 || (keys.length === 1 && keys[0] === 'q') ? 2 : 3
}

/** DRF `media_type_matches(renderer, accepted)`: the renderer's type has no params, so only types compare. */
function matches(renderer: MediaType, accepted: MediaType): boolean {
  if (renderer.sub !== '*' && accepted.sub !== '*' && accepted.sub !== renderer.sub) return false
  if (renderer.main !== '*' && accepted.main !== '*' && accepted.main !== renderer.main) return false
  return true
}

const JSON_RENDERER = parseMediaType('application/json')
const HTML_RENDERER = parseMediaType('text/html')

export interface Negotiated {
  /** Output indent: 4 by default, `Accept: application/json; indent=N` clamps N to 0..8, 0 = compact. */
  readonly indent: number
}

/**
 * `DefaultContentNegotiation.select_renderer`. Throws the 404 `{"message": ""}` for an unknown
 * `?format=` and 406 for an unsatisfiable `Accept` (both verified).
 */
/** DRF's 406 text in each `LANGUAGE_CODE` the fake speaks (DRF's own translations). */
const NOT_ACCEPTABLE = {
  en: 'Could not satisfy the request Accept header.',
  de: 'Kann die Accept Kopfzeile der Anfrage nicht erfüllen.',
} as const

export type LanguageCode = keyof typeof NOT_ACCEPTABLE

export function negotiate(query: QueryDict, acceptHeader: string | undefined, language: LanguageCode = 'en'): Negotiated {
  let renderers = [JSON_RENDERER, HTML_RENDERER]
  const format = query.get('format')
  if (format) {
    // DRF keeps the renderers of that format: `json` → JSONRenderer, `api` → the (text/html) browsable one.
    if (format === 'json') renderers = [JSON_RENDERER]
    else if (format === 'api') renderers = [HTML_RENDERER]
    else throw new ApiError(404, { message: '' })
  }
  const accepts = (acceptHeader ?? '*/*').split(',').map((token) => parseMediaType(token.trim()))
  for (let level = 3; level >= 0; level--) {
    const set = accepts.filter((media) => precedence(media) === level)
    for (const renderer of renderers) {
      for (const accepted of set) {
        if (matches(renderer, accepted)) return { indent: indentFrom(accepted) }
      }
    }
  }
  throw new ApiError(406, { detail: NOT_ACCEPTABLE[language] })
}

/** `JSONRenderer.get_indent`: `indent` param as Python `int`, clamped to 0..8, 0 → compact; else 4. */
function indentFrom(accepted: MediaType): number {
  const raw = accepted.params.get('indent')
  const parsed = raw === undefined ? undefined : parsePyInt(raw)
  if (parsed === undefined) return DEFAULT_INDENT
  return parsed < 0n ? 0 : parsed > 8n ? 8 : Number(parsed)
}

/**
 * DRF `BasicAuthentication` (SessionAuthentication never fails for a bogus cookie): any Basic credentials
 * are wrong on the fake, and the 403 (not 401) comes from SessionAuthentication being first (docs/wagtail-compatibility.md#headers).
 */
export function authenticate(authorization: string | undefined): void {
  if (authorization === undefined) return
  const parts = authorization.split(/\s+/).filter((part) => part !== '')
  if (parts[0]?.toLowerCase() !== 'basic') return
  let detail = 'Invalid username/password.'
  if (parts.length === 1) detail = 'Invalid basic header. No credentials provided.'
  else if (parts.length > 2) detail = 'Invalid basic header. Credentials string should not contain spaces.'
  else if (!/^[A-Za-z0-9+/]*={0,2}$/.test(parts[1] as string) || !Buffer.from(parts[1] as string, 'base64').includes(0x3a)) {
    detail = 'Invalid basic header. Credentials not correctly base64 encoded.'
  }
  throw new ApiError(403, { detail })
}
