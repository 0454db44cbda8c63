/**
 * One GET through an undici dispatcher, its body collected in memory straight from the
 * connection's chunks: no response stream, no promise per chunk. The sync reads a body for every
 * page of the tree, and a stream per answer (undici's `request`) was a large share of its CPU.
 * @module
 */
import type { Dispatcher } from 'undici'
import type { IncomingHttpHeaders } from 'node:http'

export interface BufferedAnswer {
  readonly status: number
  readonly headers: IncomingHttpHeaders
  /** `undefined` for an answer `drain` picked: its body was read (up to a limit) and dropped. */
  readonly body: Buffer | undefined
}

export interface BufferedGetOptions {
  readonly origin: string
  readonly path: string
  readonly headers: Readonly<Record<string, string>>
  readonly headersTimeout: number
  readonly bodyTimeout: number
  /** Refuses a body beyond this many bytes (by Content-Length first, then by counting) with `tooLarge()`. */
  readonly maxBytes: number
  readonly tooLarge: () => Error
  /**
   * Whether an answer is only to be drained (a status the caller retries): up to `drainBytes` are
   * read so the connection can be reused; a longer body gets the connection closed instead.
   */
  readonly drain: (status: number, headers: IncomingHttpHeaders) => boolean
  readonly drainBytes: number
}

export interface BufferedGet {
  readonly answer: Promise<BufferedAnswer>
  /** Stops the request (queued, waiting or reading): `answer` rejects with `reason`. */
  abort(reason: Error): void
}

/** The error a drained answer is cut off with once it passes `drainBytes`; never seen by callers. */
class DrainedEnough extends Error {}

class Collector implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | undefined
  private abortReason: Error | undefined
  private status = 0
  private headers: IncomingHttpHeaders = {}
  private draining = false
  private chunks: Buffer[] = []
  private size = 0

  constructor(
    private readonly options: BufferedGetOptions,
    private readonly resolve: (answer: BufferedAnswer) => void,
    private readonly reject: (error: Error) => void,
  ) {}

  abort(reason: Error): void {
    if (this.controller) this.controller.abort(reason)
    else this.abortReason ??= reason
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller
    if (this.abortReason !== undefined) controller.abort(this.abortReason)
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    // 1xx answers come before the final one.
    if (statusCode < 200) return
    this.status = statusCode
    this.headers = headers
    this.draining = this.options.drain(statusCode, headers)
    const declared = Number(headers['content-length'])
    if (!this.draining && Number.isFinite(declared) && declared > this.options.maxBytes) controller.abort(this.options.tooLarge())
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.size += chunk.length
    if (this.draining) {
      if (this.size > this.options.drainBytes) controller.abort(new DrainedEnough())
      return
    }
    // Aborting drops the socket instead of downloading the rest.
    if (this.size > this.options.maxBytes) controller.abort(this.options.tooLarge())
    else this.chunks.push(chunk)
  }

  onResponseEnd(): void {
    this.resolve({ status: this.status, headers: this.headers, body: this.draining ? undefined : Buffer.concat(this.chunks, this.size) })
  }

  onResponseError(_controller: Dispatcher.DispatchController | undefined, error: Error): void {
    if (error instanceof DrainedEnough) this.resolve({ status: this.status, headers: this.headers, body: undefined })
    else this.reject(error)
  }
}

export function bufferedGet(dispatcher: Dispatcher, options: BufferedGetOptions): BufferedGet {
  let collector!: Collector
  const answer = new Promise<BufferedAnswer>((resolve, reject) => {
    collector = new Collector(options, resolve, reject)
  })
  dispatcher.dispatch(
    { origin: options.origin, path: options.path, method: 'GET', headers: options.headers, headersTimeout: options.headersTimeout, bodyTimeout: options.bodyTimeout },
    collector,
  )
  return { answer, abort: (reason) => collector.abort(reason) }
}
