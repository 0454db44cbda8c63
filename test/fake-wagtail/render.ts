/**
 * Serialisation exactly as Django REST framework's `JSONRenderer` (with Wagtail's indent 4) and Django's
 * default error pages write it (docs/wagtail-compatibility.md#response-bodies).
 * @module
 */

/** Wagtail sets `renderer_context["indent"] = 4` (docs/wagtail-compatibility.md#response-bodies). */
export const DEFAULT_INDENT = 4

/**
 * DRF JSON bytes: `json.dumps(…, indent=N, ensure_ascii=False)` equals `JSON.stringify(v, null, N)` for
 * strings/ints/bools/null, except that DRF escapes U+2028/U+2029 (verified: `"Intro \u2028 line"`).
 * `indent` 0 gives DRF's compact form (`indent=0` in the Accept header, docs/wagtail-compatibility.md#response-bodies). No trailing newline.
 */
export function drfJson(value: unknown, indent: number = DEFAULT_INDENT): string {
  const text = indent > 0 ? JSON.stringify(value, null, indent) : JSON.stringify(value)
  return escapeLineSeparators(text)
}

export function escapeLineSeparators(text: string): string {
  return text.replace(/[\u2028\u2029]/g, (c) => (c === '\u2028' ? '\\u2028' : '\\u2029'))
}

/** Django's default (DEBUG=False) 404 page: 179 bytes, `text/html; charset=utf-8` (probe `/pages/abc/`). */
export const DJANGO_404_HTML = `
<!doctype html>
<html lang="en">
<head>
  <title>Not Found</title>
</head>
<body>
  <h1>Not Found</h1><p>The requested resource was not found on this server.</p>
</body>
</html>
`

/** Django's default (DEBUG=False) 500 page: 145 bytes (probe `?site=nope`). */
export const DJANGO_500_HTML = `
<!doctype html>
<html lang="en">
<head>
  <title>Server Error (500)</title>
</head>
<body>
  <h1>Server Error (500)</h1><p></p>
</body>
</html>
`

export const HTML_CONTENT_TYPE = 'text/html; charset=utf-8'
export const JSON_CONTENT_TYPE = 'application/json'

/** DRF `SimpleMetadata` for `PagesAPIViewSet` — the same 248 bytes on every route (docs/wagtail-compatibility.md#routes-and-methods). */
export const OPTIONS_METADATA = {
  name: 'Pages Api',
  description: '',
  renders: ['application/json', 'text/html'],
  parses: ['application/json', 'application/x-www-form-urlencoded', 'multipart/form-data'],
}

/** What Django's SessionMiddleware sends back for a stale/bogus `sessionid` cookie (docs/wagtail-compatibility.md#headers). */
export const DELETE_SESSION_COOKIE = 'sessionid=""; expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=0; Path=/; SameSite=Lax'
