/**
 * `POST /-/refresh`: a webhook for CMS setups that cannot use the PURGE receiver. Wagtail's
 * frontend_cache only speaks PURGE through HTTPBackend, but any custom `BaseBackend` (or a
 * `page_published` signal handler) can POST here instead (docs/wagtail-compatibility.md#wire-format); it also covers what Wagtail
 * never purges, such as moves and reorders (docs/wagtail-compatibility.md#what-wagtail-purges), with `{"all": true}`.
 *
 * Body: `{"ids": [1, 2, 3]}` (1–10000 page ids) or `{"all": true}`, parsed here from the raw bytes
 * whatever the Content-Type, because the app drops request bodies everywhere else. The bearer token
 * is checked in `onRequest`, before a single byte of the body is read. Answers are immediate (202):
 * the sync does the work and coalesces bursts.
 * @module
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify'
import { getMember, JsonSyntaxError, parseJsonSpans, type JsonNode } from '../../json/json-spans.js'
import type { RequestRefresh } from '../../sync/refresh-request.js'
import { createSecretCheck } from '../purge-access.js'
import type { LogSink } from '../../observability/log-sink.js'

export const REFRESH_PATH = '/-/refresh'
/** Room for 10000 ids of any size, with whitespace. */
export const REFRESH_BODY_LIMIT = 64 * 1024
export const MAX_REFRESH_IDS = 10_000

export type RefreshWebhookLogger = Pick<LogSink, 'info' | 'warn' | 'error'>

export interface RefreshWebhookOptions {
  /** `REFRESH_TOKEN`, sent as `Authorization: Bearer <token>`. Must not be empty. */
  readonly token: string
  readonly requestRefresh: RequestRefresh
  readonly logger: RefreshWebhookLogger
  /** For metrics: called once per POST with what became of it. */
  readonly onWebhook?: (result: 'accepted' | 'unauthorized' | 'bad-request') => void
}

/** A valid webhook body. */
export type RefreshBody = { readonly ids: readonly number[] } | { readonly all: true }

export type RefreshBodyResult = { readonly ok: true; readonly body: RefreshBody } | { readonly ok: false; readonly reason: string }

const USAGE = 'send {"ids": [1, 2, 3]} or {"all": true}'

/**
 * Reads a webhook body. Numbers are checked on their source text (json-spans), so an id beyond
 * 2^53 − 1 is refused as written instead of being rounded to another page's id.
 */
export function parseRefreshBody(bytes: Buffer | undefined): RefreshBodyResult {
  if (bytes === undefined || bytes.length === 0) return fail(`the body is empty: ${USAGE}`)
  let text: string
  try {
    // Fatal on bad UTF-8; a leading BOM is dropped (RFC 8259 §8.1 lets parsers ignore it).
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes)
  } catch {
    return fail('the body is not valid UTF-8')
  }
  let root: JsonNode
  try {
    root = parseJsonSpans(text)
  } catch (error) {
    if (error instanceof JsonSyntaxError) return fail(`the body is not valid JSON: ${error.message}`)
    throw error
  }
  if (root.kind !== 'object') return fail(`the body must be a JSON object, not ${describe(root)}: ${USAGE}`)

  const seen = new Set<string>()
  for (const { key } of root.entries) {
    if (key !== 'ids' && key !== 'all') return fail(`unknown key ${JSON.stringify(key)}: ${USAGE}`)
    if (seen.has(key)) return fail(`the key "${key}" appears more than once`)
    seen.add(key)
  }
  const ids = getMember(root, 'ids')
  const all = getMember(root, 'all')
  if (ids !== undefined && all !== undefined) return fail('send either "ids" or "all", not both')
  if (all !== undefined) {
    return all.kind === 'true' ? { ok: true, body: { all: true } } : fail(`"all" must be true, not ${describe(all, text)}`)
  }
  if (ids === undefined) return fail(`the object is empty: ${USAGE}`)
  if (ids.kind !== 'array') return fail(`"ids" must be an array of page ids, not ${describe(ids, text)}`)
  if (ids.items.length === 0) return fail('"ids" must not be empty (send {"all": true} to refresh every page)')
  if (ids.items.length > MAX_REFRESH_IDS) {
    return fail(`"ids" has ${ids.items.length} entries; at most ${MAX_REFRESH_IDS} are allowed (send {"all": true} instead)`)
  }
  const unique = new Set<number>()
  for (const [index, item] of ids.items.entries()) {
    const id = item.kind === 'number' && /^[1-9][0-9]*$/.test(item.raw) ? Number(item.raw) : NaN
    if (!Number.isSafeInteger(id)) {
      return fail(`"ids"[${index}] must be a page id (an integer from 1 to ${Number.MAX_SAFE_INTEGER}), not ${describe(item, text)}`)
    }
    unique.add(id)
  }
  return { ok: true, body: { ids: [...unique] } }
}

function fail(reason: string): RefreshBodyResult {
  return { ok: false, reason }
}

/** A value for an error message: its source text when short, its kind otherwise. */
function describe(node: JsonNode, text?: string): string {
  if (text !== undefined && node.end - node.start <= 40) return text.slice(node.start, node.end)
  switch (node.kind) {
    case 'object': return 'an object'
    case 'array': return 'an array'
    case 'string': return 'a string'
    case 'number': return 'a number'
    default: return node.kind
  }
}

/** `Authorization: Bearer <token>`: the scheme is case-insensitive (RFC 9110 §11.1). */
function bearerToken(header: string | undefined): string | undefined {
  if (header === undefined) return undefined
  const match = /^bearer[ \t]+(.*?)[ \t]*$/i.exec(header)
  return match?.[1] === '' ? undefined : match?.[1]
}

function sendJson(reply: FastifyReply, status: number, body: object): FastifyReply {
  return reply.code(status).header('cache-control', 'no-store').send(body)
}

/**
 * Registers the webhook in its own encapsulated plugin: the app drops every request body, so the
 * plugin swaps in a parser that keeps the raw bytes (up to {@link REFRESH_BODY_LIMIT}).
 */
export function registerRefreshWebhook(app: FastifyInstance, options: RefreshWebhookOptions): void {
  // Throws on an empty token: an empty bearer must never open the webhook.
  const tokenMatches = createSecretCheck(options.token)
  const { logger } = options

  app.register(async (child) => {
    child.removeAllContentTypeParsers()
    child.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: REFRESH_BODY_LIMIT }, (_request, body, done) => done(null, body))

    child.setErrorHandler((error: { statusCode?: number; code?: string; message?: string }, _request, reply) => {
      const status = error.statusCode ?? 500
      if (status >= 500) {
        logger.error({ err: error }, 'refresh webhook failed')
        return sendJson(reply, 500, { message: 'internal error' })
      }
      options.onWebhook?.('bad-request')
      if (status === 413) return sendJson(reply, 413, { message: `the body is larger than ${REFRESH_BODY_LIMIT} bytes` })
      if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return sendJson(reply, status, { message: 'the Content-Type header is not a valid media type' })
      return sendJson(reply, status, { message: error.message ?? 'bad request' })
    })

    const authorize = (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
      const token = bearerToken(request.headers.authorization)
      if (token !== undefined && tokenMatches(token)) return done()
      options.onWebhook?.('unauthorized')
      logger.warn({ remoteAddress: request.socket.remoteAddress, credentials: token === undefined ? 'missing' : 'wrong' }, 'refresh webhook refused: bad bearer token')
      void sendJson(reply.header('www-authenticate', 'Bearer'), 401, {
        message: token === undefined ? 'this webhook needs an "Authorization: Bearer <REFRESH_TOKEN>" header' : 'the bearer token is not valid',
      })
    }

    child.route({
      method: 'POST',
      url: REFRESH_PATH,
      bodyLimit: REFRESH_BODY_LIMIT,
      onRequest: authorize,
      handler: async (request, reply) => {
        const parsed = parseRefreshBody(Buffer.isBuffer(request.body) ? request.body : undefined)
        if (!parsed.ok) {
          options.onWebhook?.('bad-request')
          logger.warn({ reason: parsed.reason }, 'refresh webhook: bad request')
          return sendJson(reply, 400, { message: parsed.reason })
        }
        const body = parsed.body
        if ('all' in body) {
          options.requestRefresh({ all: true, reason: 'webhook' })
          logger.info({ all: true }, 'refresh webhook accepted')
          options.onWebhook?.('accepted')
          return sendJson(reply, 202, { status: 'accepted', all: true })
        }
        options.requestRefresh({ ids: body.ids, listing: true, reason: 'webhook' })
        logger.info({ ids: body.ids.length <= 20 ? body.ids : `${body.ids.length} ids` }, 'refresh webhook accepted')
        options.onWebhook?.('accepted')
        return sendJson(reply, 202, { status: 'accepted', ids: body.ids })
      },
    })

    // Every other method: 405 from onRequest, so no body is read for it.
    const methodNotAllowed = (request: FastifyRequest, reply: FastifyReply) => {
      void sendJson(reply.header('allow', 'POST'), 405, { message: `method ${request.method} is not allowed on ${REFRESH_PATH}: use POST` })
    }
    child.route({
      method: child.supportedMethods.filter((method) => method !== 'POST'),
      url: REFRESH_PATH,
      onRequest: methodNotAllowed,
      handler: methodNotAllowed,
    })
  })
}
