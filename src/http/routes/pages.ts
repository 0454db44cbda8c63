/**
 * The pages API routes. Every method reaches one handler per route so that HEAD, OPTIONS and the
 * 405s answer exactly as DRF does (docs/wagtail-compatibility.md#routes-and-methods); the work is in `pages-service.ts`.
 * @module
 */
import type { IncomingMessage } from 'node:http'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { negotiate } from '../../query/negotiate.js'
import type { WagtailError } from '../../query/wagtail-messages.js'
import { parseQueryParams } from '../../query/query-params.js'
import {
  appendSlashAnswer,
  errorAnswer,
  methodNotAllowedAnswer,
  notModifiedAnswer,
  NOT_FOUND_ANSWER,
  OPTIONS_ANSWER,
  type HttpAnswer,
} from '../answers.js'
import { PAGES_PATH, type PagesRequest, type PagesService } from '../pages-service.js'
import { ifNoneMatchMatches } from '../validators.js'

export function sendAnswer(reply: FastifyReply, answer: HttpAnswer): FastifyReply {
  // A 304 has no body (RFC 9110 §15.4.5): sending an empty Buffer would make Fastify add
  // `Content-Type: application/octet-stream`.
  if (answer.status === 304) return reply.code(304).headers(answer.headers).send()
  return reply.code(answer.status).headers(answer.headers).send(answer.body)
}

function split(request: FastifyRequest): { path: string; rawQuery: string | undefined } {
  const url = request.raw.url ?? '/'
  const q = url.indexOf('?')
  return q < 0 ? { path: url, rawQuery: undefined } : { path: url.slice(0, q), rawQuery: url.slice(q + 1) }
}

type View = (request: PagesRequest) => HttpAnswer | Promise<HttpAnswer>

/** Django routes on the percent-decoded path; a path that does not decode matches no route. */
function decodePath(path: string): string | undefined {
  try {
    return decodeURIComponent(path)
  } catch {
    return undefined
  }
}

/** The three API routes (what DRF answers 405 on, whatever the method). */
export function isApiRoute(rawPath: string): boolean {
  const path = decodePath(rawPath)
  return path !== undefined && path.startsWith(PAGES_PATH) && /^(?:[0-9]+\/|find\/)?$/.test(path.slice(PAGES_PATH.length))
}

const notModified = new WeakMap<HttpAnswer, HttpAnswer>()

/**
 * RFC 9110 §13.1.2: when the client's copy is current, send the validators, not the body. Shared
 * by the Fastify routes and the fast path (`fast-path.ts`), so both answer a request alike.
 */
export function conditionalAnswer(answer: HttpAnswer, ifNoneMatch: string | undefined): HttpAnswer {
  const etag = answer.status === 200 ? answer.headers['etag'] : undefined
  if (etag === undefined || ifNoneMatch === undefined || !ifNoneMatchMatches(ifNoneMatch, etag)) return answer
  let answer304 = notModified.get(answer)
  if (!answer304) notModified.set(answer, (answer304 = notModifiedAnswer(answer)))
  return answer304
}

/** GET and HEAD run the view (Node drops a HEAD body, keeping Content-Length); OPTIONS and others are DRF's. */
type ClientOf = (req: IncomingMessage) => string | undefined

async function dispatch(
  request: FastifyRequest, reply: FastifyReply, view: View, clientOf: ClientOf | undefined, notAcceptable: () => WagtailError,
): Promise<FastifyReply> {
  const { rawQuery } = split(request)
  const accept = request.headers.accept
  switch (request.method) {
    case 'GET':
    case 'HEAD': {
      const client = clientOf ? { client: () => clientOf(request.raw) } : {}
      return sendAnswer(reply, conditionalAnswer(await view({ rawQuery, accept, ...client }), request.headers['if-none-match']))
    }
    case 'OPTIONS': {
      // DRF negotiates before answering OPTIONS too.
      const refused = negotiate(parseQueryParams(rawQuery ?? ''), accept, notAcceptable())
      return sendAnswer(reply, refused ? errorAnswer(refused) : OPTIONS_ANSWER)
    }
    default:
      return sendAnswer(reply, methodNotAllowedAnswer(request.method))
  }
}

/** @param clientOf the client's address, for its share of the CMS budget (README, "Protecting the CMS"). */
export function registerPagesRoutes(app: FastifyInstance, pages: PagesService, clientOf?: ClientOf): void {
  app.all(PAGES_PATH, (request, reply) => dispatch(request, reply, pages.list, clientOf, pages.notAcceptable))
  app.all(`${PAGES_PATH}find/`, (request, reply) => dispatch(request, reply, pages.find, clientOf, pages.notAcceptable))
  app.all(PAGES_PATH.slice(0, -1), (request, reply) => {
    const { path, rawQuery } = split(request)
    return sendAnswer(reply, appendSlashAnswer(path, rawQuery))
  })

  // `<id>/` (Django's `[0-9]+`, leading zeros allowed), or a slash-less route to redirect, or nothing.
  app.all(`${PAGES_PATH}*`, (request, reply) => {
    const { path, rawQuery } = split(request)
    const rest = decodePath(path.slice(PAGES_PATH.length)) ?? ''
    const detail = /^([0-9]+)\/$/.exec(rest)
    if (detail) return dispatch(request, reply, (req) => pages.detail(detail[1]!, req), clientOf, pages.notAcceptable)
    if (rest === 'find/') return dispatch(request, reply, pages.find, clientOf, pages.notAcceptable)
    if (/^(?:[0-9]+|find)$/.test(rest)) return sendAnswer(reply, appendSlashAnswer(path, rawQuery))
    return sendAnswer(reply, NOT_FOUND_ANSWER)
  })
}
