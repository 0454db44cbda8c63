/**
 * Writing an answer to the wire, normally or with an injected fault (hang, reset, truncated JSON,
 * trickled body, oversize body, arbitrary status/JSON).
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Answer } from './pages-api.js'
import { jsonAnswer } from './pages-api.js'
import { DEFAULT_INDENT, DJANGO_500_HTML, HTML_CONTENT_TYPE, JSON_CONTENT_TYPE } from './render.js'
import type { Fault } from './types.js'

/** Timers the server must clear on `close()` so no fault outlives it. */
export interface TimerRegistry {
  setTimeout(fn: () => void, ms: number): void
}

const WRONG_CONTENT_HTML = '<!doctype html>\n<html lang="en"><head><title>Sign in</title></head><body><h1>Please sign in</h1></body></html>\n'

export function writeAnswer(res: ServerResponse, answer: Answer, head: boolean): void {
  res.writeHead(answer.status, answer.headers.map(([name, value]) => [name, value]).flat())
  res.end(head ? undefined : answer.body)
}

/** Applies `fault`; `real` computes the answer the fake would otherwise give. */
export function writeFault(
  req: IncomingMessage,
  res: ServerResponse,
  fault: Fault,
  real: () => Answer,
  timers: TimerRegistry,
): void {
  const head = req.method === 'HEAD'
  switch (fault.type) {
    case 'status': {
      const body = Buffer.from(fault.body ?? (fault.status === 500 ? DJANGO_500_HTML : ''), 'utf8')
      const contentType = fault.contentType ?? HTML_CONTENT_TYPE
      const extra = Object.entries(fault.headers ?? {})
      writeAnswer(res, { status: fault.status, headers: [['Content-Type', contentType], ...extra, ['Content-Length', String(body.length)]], body }, head)
      return
    }
    case 'hang':
      // Nothing is written; the server destroys the socket on close().
      return
    case 'reset':
      req.socket.destroy()
      return
    case 'malformed-json': {
      const full = real().body
      // Cutting a JSON document anywhere before its end leaves invalid JSON.
      const body = full.length >= 2 ? full.subarray(0, Math.max(1, Math.floor(full.length / 2))) : Buffer.from('{"meta": {')
      writeAnswer(res, { status: 200, headers: [['Content-Type', JSON_CONTENT_TYPE], ['Content-Length', String(body.length)]], body }, head)
      return
    }
    case 'wrong-content-type': {
      const body = Buffer.from(WRONG_CONTENT_HTML, 'utf8')
      writeAnswer(res, { status: 200, headers: [['Content-Type', HTML_CONTENT_TYPE], ['Content-Length', String(body.length)]], body }, head)
      return
    }
    case 'trickle':
      trickle(res, real(), head, fault.bytesPerChunk, fault.intervalMs, timers)
      return
    case 'oversize':
      oversize(res, fault.bytes, head)
      return
    case 'json':
      writeAnswer(res, jsonAnswer(fault.status, fault.body, DEFAULT_INDENT, 'Accept, Cookie'), head)
      return
  }
}

function trickle(res: ServerResponse, answer: Answer, head: boolean, bytesPerChunk: number, intervalMs: number, timers: TimerRegistry): void {
  res.writeHead(answer.status, answer.headers.map(([name, value]) => [name, value]).flat())
  if (head || answer.body.length === 0) {
    res.end()
    return
  }
  const step = Math.max(1, Math.floor(bytesPerChunk))
  let offset = 0
  const next = (): void => {
    if (res.destroyed) return
    const chunk = answer.body.subarray(offset, offset + step)
    offset += chunk.length
    if (offset >= answer.body.length) {
      res.end(chunk)
      return
    }
    res.write(chunk)
    timers.setTimeout(next, intervalMs)
  }
  next()
}

/** A single JSON string of exactly `bytes` bytes (`"xxx…"`), streamed with back-pressure. */
function oversize(res: ServerResponse, bytes: number, head: boolean): void {
  const total = Math.max(2, Math.floor(bytes))
  res.writeHead(200, ['Content-Type', JSON_CONTENT_TYPE, 'Content-Length', String(total)])
  if (head) {
    res.end()
    return
  }
  const block = Buffer.alloc(64 * 1024, 'x')
  let remaining = total - 2
  res.write('"')
  const pump = (): void => {
    while (remaining > 0 && !res.destroyed) {
      const chunk = remaining >= block.length ? block : block.subarray(0, remaining)
      remaining -= chunk.length
      if (!res.write(chunk)) {
        res.once('drain', pump)
        return
      }
    }
    if (!res.destroyed) res.end('"')
  }
  pump()
}
