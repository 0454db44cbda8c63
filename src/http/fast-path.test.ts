import { createServer, type IncomingMessage, type Server } from 'node:http'
import { connect, type AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { HttpAnswer } from './answers.js'
import { createFastPath } from './fast-path.js'
import { PreparedServerResponse } from './prepared-headers.js'
import type { Served } from './serve.js'

/** What the stub serving core answers next. */
let served: Served
const HIT: HttpAnswer = {
  status: 200,
  headers: { 'content-type': 'application/json', vary: 'Accept', etag: '"e1"', 'cache-status': 'cms-shield; hit; detail=snapshot', 'surrogate-key': 'cms-pages cms-page-9' },
  body: Buffer.from('{"id": 9}'),
  cache: 'snapshot',
}
const labels = { route: 'detail', cache: 'snapshot', status: 200 } as const

async function listen(prepared: boolean): Promise<Server> {
  const fastPath = createFastPath({ serve: () => served, isClosing: () => false, afterAnswer: () => undefined, pagesPath: '/api/v1/cms/pages/' })
  const handler = (req: IncomingMessage, res: Parameters<typeof fastPath>[1]) => {
    if (!fastPath(req, res)) res.writeHead(500).end()
  }
  const server = prepared ? createServer({ ServerResponse: PreparedServerResponse }, handler) : createServer(handler)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return server
}

/** One raw response (the server closes after it), with its Date line taken out. */
async function rawResponse(server: Server, method = 'GET'): Promise<string> {
  const socket = connect((server.address() as AddressInfo).port, '127.0.0.1')
  const chunks: Buffer[] = []
  socket.on('data', (chunk: Buffer) => chunks.push(chunk))
  socket.write(`${method} /api/v1/cms/pages/9/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)
  await new Promise((resolve) => socket.on('close', resolve))
  return Buffer.concat(chunks).toString('latin1').replace(/\r\nDate: [^\r]*/, '')
}

let plain: Server
let prepared: Server
beforeAll(async () => {
  plain = await listen(false)
  prepared = await listen(true)
})
afterAll(async () => {
  for (const server of [plain, prepared]) await new Promise((resolve) => server.close(resolve))
})

describe('the fast path\'s header lists', () => {
  it('write the same response through a plain ServerResponse as through a prepared one, with and without a request id', async () => {
    for (const requestId of [undefined, 'trace-1', 'trace-2']) {
      served = { answer: HIT, labels, requestId }
      for (const method of ['GET', 'HEAD']) {
        const viaPlain = await rawResponse(plain, method)
        const viaPrepared = await rawResponse(prepared, method)
        expect(viaPrepared.split('\r\n').sort()).toEqual(viaPlain.split('\r\n').sort())
        expect(viaPlain).toContain('\r\nsurrogate-key: cms-pages cms-page-9\r\n')
        expect(viaPlain).toContain('\r\ncontent-length: 9\r\n')
        if (requestId) expect(viaPrepared).toContain(`\r\nx-request-id: ${requestId}\r\n`)
        else expect(viaPrepared).not.toMatch(/x-request-id/i)
      }
    }
  })

  it('send a 304 without Content-Length either way', async () => {
    served = { answer: { status: 304, headers: { etag: '"e1"', vary: 'Accept' }, body: Buffer.alloc(0) }, labels: { ...labels, status: 304 }, requestId: undefined }
    const viaPlain = await rawResponse(plain)
    const viaPrepared = await rawResponse(prepared)
    expect(viaPrepared).toBe(viaPlain)
    expect(viaPrepared).toMatch(/^HTTP\/1\.1 304 Not Modified\r\n/)
    expect(viaPrepared).not.toMatch(/content-length/i)
  })
})
