/**
 * The Fastify writer of the serving core (`serve.ts`): the pages API's routes, its not-found
 * handler and the hooks that follow every Fastify answer. It decides nothing about the pages API's
 * answers; it copies `serve()`'s result onto the reply, as the fast path copies it onto the socket.
 * @module
 */
import type { IncomingMessage } from 'node:http'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { unservedLabels, type AfterAnswer } from './after-answer.js'
import { INTERNAL_ERROR_ANSWER, NOT_FOUND_ANSWER, proxyFailureAnswer, type HttpAnswer } from './answers.js'
import type { RouteApiPath } from './api-router.js'
import type { Serve, Served } from './serve.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** What the serving core answered, for the onResponse hook's labels. */
    served: Served | undefined
  }
}

export function sendAnswer(reply: FastifyReply, answer: HttpAnswer): FastifyReply {
  // A 304 has no body (RFC 9110 §15.4.5): sending an empty Buffer would make Fastify add
  // `Content-Type: application/octet-stream`.
  if (answer.status === 304) return reply.code(304).headers(answer.headers).send()
  return reply.code(answer.status).headers(answer.headers).send(answer.body)
}

/**
 * Every method on the API's prefix reaches `serve()` (it answers HEAD, OPTIONS and the 405s as DRF
 * does), through these routes or, for methods Fastify has no route for (PROPFIND, SEARCH…), the
 * not-found handler; whatever `serve()` does not claim is Django's bare 404.
 */
export function registerServeRoutes(app: FastifyInstance, serve: Serve<IncomingMessage>, apiRoot: string): void {
  const write = (request: FastifyRequest, reply: FastifyReply, served: Served): FastifyReply => {
    request.served = served
    // A hit without an id (REQUEST_ID_ON_HITS=false): the answer hook's header goes, as on the fast path.
    if (served.requestId === undefined) reply.removeHeader('x-request-id')
    return sendAnswer(reply, served.answer)
  }
  const handler = (request: FastifyRequest, reply: FastifyReply): FastifyReply | Promise<FastifyReply> => {
    const served = serve(request.raw, request.id)
    if (served === undefined) return sendAnswer(reply, NOT_FOUND_ANSWER)
    return served instanceof Promise ? served.then((result) => write(request, reply, result)) : write(request, reply, served)
  }
  // The API takes no bodies: accept any content type (so a POST gets DRF's 405, not a 415) and drop it.
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: 1024 * 1024 }, (_request, _body, done) => done(null, undefined))
  app.decorateRequest('served', undefined)
  app.all(apiRoot.slice(0, -1), handler)
  app.all(apiRoot, handler)
  app.all(`${apiRoot}*`, handler)
  app.setNotFoundHandler(handler)
  // What fails before or outside the serving core (a body over the limit, a route's bug).
  app.setErrorHandler((error, request, reply) => {
    const status = (error as { statusCode?: number }).statusCode ?? 500
    if (status >= 500) {
      request.log.error({ err: error }, 'request failed')
      return sendAnswer(reply, INTERNAL_ERROR_ANSWER)
    }
    return sendAnswer(reply, proxyFailureAnswer(status, error instanceof Error ? error.message : 'bad request'))
  })
}

export interface AnswerHooksOptions {
  readonly afterAnswer: AfterAnswer
  /** Whether the instance is closing: Fastify's own answers get `Connection: close` then too. */
  readonly isClosing: () => boolean
  /** The API's routing, for the labels of what the serving core did not answer. */
  readonly route: RouteApiPath
}

/**
 * The request id on every Fastify answer, the closing rule on Fastify's own answers (the serving
 * core's carry it already) and the after-answer step. Registered after the other routes' hooks:
 * an `onRequest` hook that answers (PURGE) runs first, as it always has.
 */
export function registerAnswerHooks(app: FastifyInstance, options: AnswerHooksOptions): void {
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id)
    done()
  })
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (options.isClosing()) reply.header('connection', 'close')
    done(null, payload)
  })
  app.addHook('onResponse', (request, reply, done) => {
    const labels = request.served?.labels ?? unservedLabels(request.method, request.url, reply.statusCode, options.route)
    // The id the answer carried: none on a hit without one (REQUEST_ID_ON_HITS=false), as on the fast path.
    const requestId = request.served ? request.served.requestId : request.id
    options.afterAnswer(requestId, request.method, request.url, labels, reply.elapsedTime)
    done()
  })
}
