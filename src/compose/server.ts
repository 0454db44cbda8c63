/**
 * Fastify's options: the `node:http` server (the fast path tried first), what Node's parser
 * refuses, the logger, request ids and router settings. Every answer here is in the API's envelope.
 * @module
 */
import { createServer, type Server } from 'node:http'
import { LogController, type FastifyHttpOptions, type FastifyServerOptions } from 'fastify'
import type { Config } from '../config/load-config.js'
import { NOT_FOUND_ANSWER, proxyFailureAnswer } from '../http/answers.js'
import type { FastPath } from '../http/fast-path.js'
import { sendAnswer } from '../http/fastify-writer.js'
import { PREPARED_HEADERS_SUPPORTED, PreparedServerResponse } from '../http/prepared-headers.js'
import { clientErrorStatus, endSocket, refuseTunnel, socketAnswer } from '../http/socket-answers.js'
import { loggerOptions } from '../observability/logging.js'
import { requestIdFrom } from '../observability/request-id.js'

/** Node's default request header limit (16 KiB), pinned. */
const MAX_HEADER_BYTES = 16 * 1024

export interface ServerOptions {
  readonly config: Config
  /** Replaces cms-shield's logger options altogether (`false` for silence). */
  readonly logger?: FastifyServerOptions['logger'] | undefined
  readonly logStream?: { write(line: string): void } | undefined
  /** Bound once serving is composed; until then (and with FAST_PATH=false) Fastify answers all. */
  readonly fastPath: () => FastPath | undefined
  /** Whether responses take prepared header blocks; default: PRIVATE_APIS and the module's self-check. */
  readonly preparedHeaders?: boolean
}

const PARSER_MESSAGES: Readonly<Record<number, string>> = { 431: 'request header fields too large', 408: 'request timeout' }

/**
 * No route declares a JSON schema: queries are checked as Wagtail checks them (its own error texts)
 * and answers are prepared bytes. Fastify loads its Ajv and fast-json-stringify compilers unless
 * given others, which took about 70 ms of every start (docs/performance.md, "a start decompresses
 * in place"); these are never called, and say so if a route ever brings a schema.
 */
function noSchemas(): never {
  throw new Error('cms-shield routes declare no JSON schemas: validate the request in the route')
}

export function serverOptions(options: ServerOptions): FastifyHttpOptions<Server> {
  const { config } = options
  return {
    serverFactory: (handler, factoryOptions) => {
      // The header limit is Node's default, set here so NODE_OPTIONS cannot raise it unseen.
      // Responses take prepared header blocks from the fast path (`http/prepared-headers.ts`).
      const prepared = options.preparedHeaders ?? (config.privateApis && PREPARED_HEADERS_SUPPORTED)
      const responses = prepared ? { ServerResponse: PreparedServerResponse } : {}
      const server = createServer({ ...factoryOptions, ...responses, maxHeaderSize: MAX_HEADER_BYTES }, (req, res) => {
        if (options.fastPath()?.(req, res) !== true) handler(req, res)
      })
      server.on('connect', (_req, socket) => refuseTunnel(socket))
      server.on('upgrade', (_req, socket) => refuseTunnel(socket))
      return server
    },
    // What Node's parser refuses gets the API's error envelope, not Fastify's own shape.
    clientErrorHandler: (error, socket) => {
      const status = clientErrorStatus((error as NodeJS.ErrnoException).code)
      endSocket(socket, socketAnswer(status, PARSER_MESSAGES[status] ?? 'bad request'))
    },
    schemaController: { compilersFactory: { buildValidator: () => noSchemas, buildSerializer: () => noSchemas } },
    logger: options.logger ?? (options.logStream ? { ...loggerOptions(config), stream: options.logStream } : loggerOptions(config)),
    // `X-Request-Id` is honoured when it looks like one, generated otherwise, and sent back.
    requestIdHeader: false,
    genReqId: (request) => requestIdFrom(request.headers['x-request-id']),
    // One line per request from the answer hooks (`http/after-answer.ts`), instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    routerOptions: {
      // Django and Fastify agree: `/pages` and `/pages/` are different routes (the first one 301s).
      ignoreTrailingSlash: false,
      maxParamLength: 1000,
    },
    return503OnClosing: true,
    // A path that is not valid percent-encoding matches no route: Django's 404, not Fastify's JSON 400.
    frameworkErrors: (error, _request, reply) => {
      if (error.code === 'FST_ERR_BAD_URL') return void sendAnswer(reply, NOT_FOUND_ANSWER)
      return void sendAnswer(reply, proxyFailureAnswer(400, 'bad request'))
    },
  }
}
