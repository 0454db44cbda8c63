/**
 * Every answer text the proxy gives in Wagtail's name, in one place (spec §2, §4, §6).
 * The texts are the CMS's contract with its clients: change them only with the spec.
 * @module
 */

/** A validation outcome in Wagtail's own words: status and exact JSON body. */
export interface WagtailError {
  readonly status: 400 | 404 | 406
  readonly body: { readonly message: string } | { readonly detail: string }
}

const badRequest = (message: string): WagtailError => ({ status: 400, body: { message } })
const notFound = (message: string): WagtailError => ({ status: 404, body: { message } })

export const wagtailErrors = {
  /** DRF: `?format=` names no renderer → bare Http404 → `{"message": ""}` (spec §1). */
  unknownFormat: notFound(''),
  /** DRF NotAcceptable; note the key is `detail` (spec §1). */
  notAcceptable: { status: 406, body: { detail: 'Could not satisfy the request Accept header.' } } as WagtailError,
  typeDoesNotExist: badRequest("type doesn't exist"),
  unknownParameters: (names: readonly string[]) =>
    badRequest(`query parameter is not an operation or a recognised field: ${names.join(', ')}`),
  fieldFilterNul: (field: string) => badRequest(`field filter error. null characters are not allowed for ${field}`),
  fieldFilterInvalid: (value: string, field: string, reason: string) =>
    badRequest(`field filter error. '${value}' is not a valid value for ${field} (${reason})`),
  positiveInteger: (param: string) => badRequest(`${param} must be a positive integer`),
  parentPageMissing: badRequest("parent page doesn't exist"),
  // The CMS crosses these two names on purpose (spec §2): keep them crossed.
  ancestorOfMissing: badRequest("descendant page doesn't exist"),
  descendantOfMissing: badRequest("ancestor page doesn't exist"),
  descendantOfWithChildOf: badRequest('filtering by descendant_of with child_of is not supported'),
  limitTooHigh: (max: number) => badRequest(`limit cannot be higher than ${max}`),
  /** Detail view: `get_object_or_404` names the queryset's model (spec §4). */
  noMatch: (modelName: string) => notFound(`No ${modelName} matches the given query.`),
  findNotFound: notFound('not found'),
} as const

/** Python's `parse_boolean` reason text (wagtail/api/v2/utils.py). */
export const booleanReason = (value: string) => `expected 'true' or 'false', got '${value}'`

/** Django's IntegerField.get_prep_value text for a bad foreign key (`alias_of=abc`). */
export const foreignKeyReason = (repr: string) => `Field 'id' expected a number but got ${repr}.`

/** DRF's 405 body: `{"detail": "Method \"POST\" not allowed."}` (spec §4). */
export const methodNotAllowed = (method: string) => ({ detail: `Method "${method}" not allowed.` })

/** DRF SimpleMetadata for PagesAPIViewSet, byte-for-byte the same on every path (spec §6.4). */
export const optionsBody = {
  name: 'Pages Api',
  description: '',
  renders: ['application/json', 'text/html'],
  parses: ['application/json', 'application/x-www-form-urlencoded', 'multipart/form-data'],
} as const

/** Django's default bare 404 page (ERROR_PAGE_TEMPLATE starts with a newline: 179 bytes), answered for paths outside the API's routes (spec §4). */
export const djangoNotFoundHtml =
  '\n<!doctype html>\n<html lang="en">\n<head>\n  <title>Not Found</title>\n</head>\n<body>\n' +
  '  <h1>Not Found</h1><p>The requested resource was not found on this server.</p>\n</body>\n</html>\n'
