/**
 * Every answer text the proxy gives in Wagtail's name, in one place (docs/wagtail-compatibility.md#error-texts).
 * The texts are the CMS's contract with its clients: change them only with that document.
 * @module
 */

/**
 * A validation outcome in Wagtail's own words: status and exact JSON body. 414 is cms-shield's
 * own: a query too long to forward (see `forward-guard.ts`), in the same envelope.
 */
export interface WagtailError {
  readonly status: 400 | 404 | 406 | 414
  readonly body: { readonly message: string } | { readonly detail: string }
}

/** The largest integer SQLite and PostgreSQL take for LIMIT/OFFSET (a signed 64-bit integer). */
export const DATABASE_INT_MAX = 2n ** 63n - 1n

const badRequest = (message: string): WagtailError => ({ status: 400, body: { message } })
const notFound = (message: string): WagtailError => ({ status: 404, body: { message } })

/** DRF's 406 text in English, its default language. */
export const NOT_ACCEPTABLE_TEXT = 'Could not satisfy the request Accept header.'

const notAcceptableByText = new Map<string, WagtailError>()

/** DRF's 406 in the CMS's own words (one object per text, so its rendered answer is built once). */
export function notAcceptableIn(text: string): WagtailError {
  let error = notAcceptableByText.get(text)
  if (!error) {
    error = { status: 406, body: { detail: text } } as WagtailError
    notAcceptableByText.set(text, error)
  }
  return error
}

export const wagtailErrors = {
  /** DRF: `?format=` names no renderer → bare Http404 → `{"message": ""}` (docs/wagtail-compatibility.md#content-negotiation). */
  unknownFormat: notFound(''),
  /** DRF NotAcceptable; note the key is `detail` (docs/wagtail-compatibility.md#content-negotiation). */
  notAcceptable: { status: 406, body: { detail: NOT_ACCEPTABLE_TEXT } } as WagtailError,
  typeDoesNotExist: badRequest("type doesn't exist"),
  unknownParameters: (names: readonly string[]) =>
    badRequest(`query parameter is not an operation or a recognised field: ${names.join(', ')}`),
  fieldFilterNul: (field: string) => badRequest(`field filter error. null characters are not allowed for ${field}`),
  fieldFilterInvalid: (value: string, field: string, reason: string) =>
    badRequest(`field filter error. '${value}' is not a valid value for ${field} (${reason})`),
  positiveInteger: (param: string) => badRequest(`${param} must be a positive integer`),
  parentPageMissing: badRequest("parent page doesn't exist"),
  // The CMS crosses these two names on purpose (docs/wagtail-compatibility.md#tree-filters): keep them crossed.
  ancestorOfMissing: badRequest("descendant page doesn't exist"),
  translationOfMissing: badRequest("translation_of page doesn't exist"),
  descendantOfMissing: badRequest("ancestor page doesn't exist"),
  descendantOfWithChildOf: badRequest('filtering by descendant_of with child_of is not supported'),
  limitTooHigh: (max: number) => badRequest(`limit cannot be higher than ${max}`),
  /** `?fields=` that does not parse: the parser's own text (`fields-parameter.ts`). */
  fieldsError: (message: string) => badRequest(`fields error: ${message}`),
  /** `?fields=` naming what the page type does not have, sorted. */
  unknownFields: (names: readonly string[]) => badRequest(`unknown fields: ${names.join(', ')}`),
  /** `?fields=name(sub)` on a field that is no relation. */
  noNestedFields: (name: string) => badRequest(`'${name}' does not support nested fields`),
  /** Detail view: `get_object_or_404` names the queryset's model (docs/wagtail-compatibility.md#detail-view). */
  noMatch: (modelName: string) => notFound(`No ${modelName} matches the given query.`),
  findNotFound: notFound('not found'),

  // Inputs Wagtail 7.x answers with an HTML 500 (docs/wagtail-compatibility.md#inputs-wagtail-answers-with-a-500); cms-shield answers them itself.
  /** 8.0's text for `?site=host:abc` (Django's IntegerField message for the port). */
  sitePortInvalid: (repr: string) => badRequest(`Field 'port' expected a number but got ${repr}.`),
  /** 8.0's answer for a `?site=` no Site can have (`get_object_or_404`). */
  siteNotFound: notFound('No Site matches the given query.'),
  /** 7.1+'s refusal of an API field the database cannot order by (`type`, `html_url`…); ≤7.0 fail with a 500. */
  cannotOrderBy: (field: string) => badRequest(`cannot order by '${field}' (unknown field)`),
  /**
   * Not Wagtail's: a forwarded query the CMS answered with a 500 while it answers everything else
   * (docs/wagtail-compatibility.md#inputs-wagtail-answers-with-a-500: unparsable values of fields only the CMS knows, an unknown `site=` on ≤ 7.x).
   * The input is what broke it, so the client gets a 4xx, never a 5xx.
   */
  cmsRejectedQuery: badRequest('the CMS could not answer this query: one of its parameters has a value it cannot use'),
  /**
   * `?search=x&search_operator=xor`: the search backend's own ValueError ("`operator` must be
   * either 'or' or 'and'."), named after the parameter the client sent.
   */
  searchOperatorInvalid: badRequest("search_operator must be either 'or' or 'and'"),
  /** `offset`/`limit` beyond the database's integers (SQLite overflow, verified 500), worded like `limitTooHigh`. */
  /** cms-shield's own: a read-through whose query the CMS's server could not take (see forward-guard.ts). */
  queryTooLong: (bytes: number, max: number) => ({
    status: 414,
    body: { message: `the query is too long to forward to the CMS (${bytes} bytes encoded; at most ${max})` },
  }) as WagtailError,
} as const

/** Python's `parse_boolean` reason text (wagtail/api/v2/utils.py). */
export const booleanReason = (value: string) => `expected 'true' or 'false', got '${value}'`

/** Django's IntegerField.get_prep_value text for a bad foreign key (`alias_of=abc`). */
export const foreignKeyReason = (repr: string) => `Field 'id' expected a number but got ${repr}.`

/** DRF's 405 body: `{"detail": "Method \"POST\" not allowed."}` (docs/wagtail-compatibility.md#routes-and-methods). */
export const methodNotAllowed = (method: string) => ({ detail: `Method "${method}" not allowed.` })

/** DRF SimpleMetadata for PagesAPIViewSet, byte-for-byte the same on every path (docs/wagtail-compatibility.md#routes-and-methods). */
export const optionsBody = {
  name: 'Pages Api',
  description: '',
  renders: ['application/json', 'text/html'],
  parses: ['application/json', 'application/x-www-form-urlencoded', 'multipart/form-data'],
} as const

/** Django's default bare 404 page (ERROR_PAGE_TEMPLATE starts with a newline: 179 bytes), answered for paths outside the API's routes (docs/wagtail-compatibility.md#routes-and-methods). */
export const djangoNotFoundHtml =
  '\n<!doctype html>\n<html lang="en">\n<head>\n  <title>Not Found</title>\n</head>\n<body>\n' +
  '  <h1>Not Found</h1><p>The requested resource was not found on this server.</p>\n</body>\n</html>\n'
