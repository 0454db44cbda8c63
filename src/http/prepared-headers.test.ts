import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { connect, type AddressInfo } from 'node:net'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { checkPreparedHeaders, prepareHeaders, PREPARED_HEADERS_SUPPORTED, PreparedServerResponse } from './prepared-headers.js'

/** What the servers below answer with, set by each test. */
interface Answer {
  status: number
  headers: Record<string, string>
  body: Buffer
}
let answer: Answer = { status: 200, headers: {}, body: Buffer.alloc(0) }

const lengthOf = (a: Answer): string[] => (a.status === 304 ? [] : ['content-length', String(a.body.length)])

/** Node's way: every header through `writeHead`. */
function writeFull(res: ServerResponse, a: Answer): void {
  res.writeHead(a.status, [...Object.entries(a.headers).flat(), ...lengthOf(a)])
  res.end(a.status === 304 ? undefined : a.body)
}

/** The prepared way, as the fast path writes. */
function writePrepared(res: ServerResponse, a: Answer): void {
  const { lines, handled } = prepareHeaders(a.headers)
  ;(res as PreparedServerResponse).preparedLines = lines
  res.writeHead(a.status, [...handled, ...lengthOf(a)])
  res.end(a.status === 304 ? undefined : a.body)
}

async function listen(write: (res: ServerResponse, a: Answer) => void, prepared: boolean): Promise<Server> {
  const handler = (_req: IncomingMessage, res: ServerResponse) => write(res, answer)
  const server = prepared ? createServer({ ServerResponse: PreparedServerResponse }, handler) : createServer(handler)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return server
}

/**
 * Sends `requests` (raw bytes) on one connection, one after the other, and returns each raw
 * response, read up to its end (header block, then Content-Length bytes); `closed`: whether the
 * server closed the connection after the last one.
 */
async function exchange(server: Server, requests: string[], bodyless = false): Promise<{ responses: string[]; closed: boolean }> {
  const socket = connect((server.address() as AddressInfo).port, '127.0.0.1')
  let buffered = Buffer.alloc(0)
  let closed = false
  let wake: () => void = () => {}
  socket.on('data', (chunk: Buffer) => { buffered = Buffer.concat([buffered, chunk]); wake() })
  socket.on('close', () => { closed = true; wake() })
  const changed = () => new Promise<void>((resolve) => { wake = resolve })
  const responses: string[] = []
  try {
    for (const request of requests) {
      socket.write(request)
      for (;;) {
        const end = buffered.indexOf('\r\n\r\n')
        if (end >= 0) {
          const head = buffered.toString('latin1', 0, end + 4)
          const length = bodyless ? 0 : Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1] ?? '0')
          if (buffered.length >= end + 4 + length) {
            responses.push(buffered.toString('latin1', 0, end + 4 + length))
            buffered = buffered.subarray(end + 4 + length)
            break
          }
        }
        if (closed) throw new Error('connection closed before the whole response')
        await changed()
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 20))
    return { responses, closed }
  } finally {
    socket.destroy()
  }
}

/** A response with its Date line taken out (the one line that differs by the second). */
const undated = (response: string) => response.replace(/\r\nDate: [^\r]*/, '')

const GET = 'GET /api/v1/cms/pages/ HTTP/1.1\r\nHost: x\r\n\r\n'

let full: Server
let prepared: Server
beforeAll(async () => {
  full = await listen(writeFull, false)
  prepared = await listen(writePrepared, true)
})
afterAll(async () => {
  for (const server of [full, prepared]) {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  }
})

const API_ANSWER: Answer = {
  status: 200,
  headers: {
    'content-type': 'application/json',
    vary: 'Accept',
    allow: 'GET, HEAD, OPTIONS',
    etag: '"abc"',
    'cache-control': 'public, max-age=60',
    'surrogate-key': 'cms-pages cms-page-3',
  },
  body: Buffer.from('{"id": 3}'),
}

describe('prepared header blocks', () => {
  it('pass their self-check on every Node line CI runs, so servers take the prepared path', () => {
    // A Node release that changes the hook fails here, rather than falling back unseen.
    expect(PREPARED_HEADERS_SUPPORTED).toBe(true)
    expect(checkPreparedHeaders()).toBe(true)
  })

  it('fail their self-check when Node builds the block without the prepared lines', () => {
    // As if a Node release stopped routing the header block through `_storeHeader`.
    class Bypassed extends PreparedServerResponse {
      override _storeHeader(firstLine: string, headers: unknown): void {
        this.preparedLines = undefined
        super._storeHeader(firstLine, headers)
      }
    }
    expect(checkPreparedHeaders(Bypassed)).toBe(false)
  })

  it('fail their self-check when the hook throws', () => {
    class Throwing extends PreparedServerResponse {
      override _storeHeader(): void {
        throw new TypeError('another shape')
      }
    }
    expect(checkPreparedHeaders(Throwing)).toBe(false)
  })

  it('put on the wire exactly the bytes writeHead would with every header, request after request', async () => {
    answer = API_ANSWER
    const expected = await exchange(full, [GET, GET])
    const got = await exchange(prepared, [GET, GET])
    expect(got.responses.map(undated)).toEqual(expected.responses.map(undated))
    expect(got.responses[1]).toContain('\r\nsurrogate-key: cms-pages cms-page-3\r\n')
    expect(got.responses[1]).toMatch(/\r\nContent-Length: 9\r\n/i)
    expect(got.closed).toBe(false)
  })

  it('keep HEAD, 304 and HTTP/1.0 framing as Node frames them', async () => {
    answer = API_ANSWER
    const head = 'HEAD /api/v1/cms/pages/ HTTP/1.1\r\nHost: x\r\n\r\n'
    for (const [request, bodyless] of [[head, true], ['GET / HTTP/1.0\r\n\r\n', false]] as const) {
      const expected = await exchange(full, [request], bodyless)
      const got = await exchange(prepared, [request], bodyless)
      expect(got.responses.map(undated)).toEqual(expected.responses.map(undated))
      expect(got.closed).toBe(expected.closed)
    }
    answer = { status: 304, headers: { etag: '"abc"', vary: 'Accept' }, body: Buffer.alloc(0) }
    const expected = await exchange(full, [GET, GET])
    const got = await exchange(prepared, [GET, GET])
    expect(got.responses.map(undated)).toEqual(expected.responses.map(undated))
    expect(got.responses[0]).not.toMatch(/content-length/i)
  })

  it('leave Connection to Node, so an answer that closes still closes the connection', async () => {
    answer = { ...API_ANSWER, headers: { ...API_ANSWER.headers, connection: 'close' } }
    expect(prepareHeaders(answer.headers).handled).toEqual(['connection', 'close'])
    const got = await exchange(prepared, [GET])
    expect(got.responses[0]!.match(/\r\nconnection: /gi)).toHaveLength(1)
    expect(got.closed).toBe(true)
  })

  it('refuse, when prepared, what writeHead would refuse', () => {
    expect(() => prepareHeaders({ 'x-a': 'one\r\nset-cookie: b=c' })).toThrow(expect.objectContaining({ code: 'ERR_INVALID_CHAR' }))
    expect(() => prepareHeaders({ 'bad name': 'x' })).toThrow(expect.objectContaining({ code: 'ERR_INVALID_HTTP_TOKEN' }))
  })

  it('equal writeHead byte for byte for any valid header set', async () => {
    const token = fc.stringMatching(/^[a-z][a-z0-9-]{0,15}$/).filter((name) => !['connection', 'content-length', 'transfer-encoding', 'date', 'expect', 'trailer', 'keep-alive', 'upgrade'].includes(name))
    const value = fc.stringMatching(/^[\x21-\x7e]([\x20-\x7e]{0,40}[\x21-\x7e])?$/)
    await fc.assert(
      fc.asyncProperty(fc.dictionary(token, value, { maxKeys: 8 }), fc.uint8Array({ maxLength: 64 }), async (headers, body) => {
        answer = { status: 200, headers, body: Buffer.from(body) }
        const expected = await exchange(full, [GET])
        const got = await exchange(prepared, [GET])
        expect(got.responses.map(undated)).toEqual(expected.responses.map(undated))
      }),
      { numRuns: 40 },
    )
  })
})
