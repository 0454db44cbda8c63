/**
 * The one error catalogue of cms-shield: every error the proxy raises on purpose has a stable
 * `code` from this table, and every code carries the HTTP status it maps to.
 *
 * Codes are part of the operator's interface (logs, alerts, metrics labels), so they never change
 * meaning once released; add new ones instead. The single HTTP error handler maps a `ProxyError`
 * to a response; for 5xx it sends a generic body, never `message` (which may name the CMS).
 * @module
 */

/** Status and one-line meaning of every code. */
export const errorCatalogue = {
  /** Configuration from the environment failed validation; the process must not start. */
  CONFIG_INVALID: { statusCode: 500, doc: 'configuration from the environment is invalid' },
  /** The CMS did not answer (headers and whole body) within UPSTREAM_TIMEOUT. */
  UPSTREAM_TIMEOUT: { statusCode: 504, doc: 'the CMS did not answer in time' },
  /** Connection to the CMS refused, reset or otherwise failed before an answer arrived. */
  UPSTREAM_UNAVAILABLE: { statusCode: 502, doc: 'the CMS could not be reached' },
  /** The CMS answered with a 5xx or a status the caller did not expect. */
  UPSTREAM_BAD_STATUS: { statusCode: 502, doc: 'the CMS answered with an unexpected status' },
  /** The CMS answered with the wrong content type, malformed JSON or JSON of the wrong shape. */
  UPSTREAM_BAD_RESPONSE: { statusCode: 502, doc: 'the CMS answered with an unusable body' },
  /** The CMS's body exceeded UPSTREAM_MAX_BODY; the transfer was cut off. */
  UPSTREAM_BODY_TOO_LARGE: { statusCode: 502, doc: 'the CMS answered with a body above UPSTREAM_MAX_BODY' },
  /** No snapshot has been loaded yet (first sync still running or failing, no stored copy). */
  NOT_READY: { statusCode: 503, doc: 'no snapshot of the page tree is loaded yet' },
  /** The synced page tree failed validation (duplicate ids, missing parent, cycle, drifting count). */
  SYNC_INCONSISTENT: { statusCode: 502, doc: 'the page tree read from the CMS is inconsistent' },
  /** A sync was cancelled (shutdown, or superseded by another sync) before it finished. */
  SYNC_ABORTED: { statusCode: 503, doc: 'the sync was cancelled before it finished' },
  /** A client's read-through miss found its own share of the CMS budget spent (READ_THROUGH_CLIENT_RATE). */
  READ_THROUGH_CLIENT_SHARE: { statusCode: 429, doc: "this client's share of the CMS budget is spent" },
  /** A read-through miss found the CMS budget spent, or no place in flight within READ_THROUGH_QUEUE_TIMEOUT. */
  READ_THROUGH_OVER_BUDGET: { statusCode: 503, doc: 'the CMS budget for client-caused requests is spent' },
} as const satisfies Record<string, { statusCode: number; doc: string }>

export type ErrorCode = keyof typeof errorCatalogue

export interface ProxyErrorOptions {
  /** The underlying error (undici error, parse error…), kept for logs. */
  cause?: unknown
  /** Structured facts for logs and callers (upstream status, path, list of problems…). */
  details?: Readonly<Record<string, unknown>>
}

export class ProxyError extends Error {
  override readonly name = 'ProxyError'
  readonly code: ErrorCode
  /** Named like Fastify's convention so its default handler would also pick it up. */
  readonly statusCode: number
  readonly details: Readonly<Record<string, unknown>> | undefined

  constructor(code: ErrorCode, message: string, options: ProxyErrorOptions = {}) {
    // `cause` goes through the standard ErrorOptions so Node prints it in stack traces.
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.code = code
    this.statusCode = errorCatalogue[code].statusCode
    this.details = options.details
  }
}

/**
 * Builds a `ProxyError` with the catalogue's status for `code`.
 *
 * @example
 * throw createError('UPSTREAM_TIMEOUT', 'GET /api/v1/cms/pages/ took longer than 10s', { details: { path } })
 */
export function createError(code: ErrorCode, message: string, options?: ProxyErrorOptions): ProxyError {
  return new ProxyError(code, message, options)
}

/**
 * True when `value` is a `ProxyError` (of `code`, when given). Checks the shape as well as the
 * class so that errors crossing a module-duplication boundary (two copies in node_modules,
 * vitest isolation) are still recognised.
 */
export function isProxyError(value: unknown, code?: ErrorCode): value is ProxyError {
  if (!(value instanceof Error)) return false
  const candidate = value as Partial<ProxyError>
  if (candidate.name !== 'ProxyError' || typeof candidate.code !== 'string') return false
  if (!Object.hasOwn(errorCatalogue, candidate.code)) return false
  return code === undefined || candidate.code === code
}
