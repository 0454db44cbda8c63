import { createServer, type Server } from 'node:net'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { endpoint } from '../../scripts/verify/http-exchange.js'

let server: Server | undefined
afterEach(() => {
  server?.close()
  server = undefined
})

/** A server that answers every request with `answer` and records what it was sent. */
async function rawServer(answer: string): Promise<{ url: string; received: string[] }> {
  const received: string[] = []
  server = createServer((socket) => {
    let data = ''
    socket.on('data', (chunk) => {
      data += chunk.toString('latin1')
      if (data.includes('\r\n\r\n')) {
        received.push(data)
        socket.end(answer)
      }
    })
    socket.on('error', () => undefined)
  })
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received }
}

describe('endpoint().send', () => {
  it("reads a HEAD's status and headers even when the server writes the GET body after them (gunicorn 20.1 with Django 5)", async () => {
    const body = '{\n    "meta": {\n        "total_count": 5\n    }\n}'
    const { url } = await rawServer(`HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: application/json\r\nVary: Accept, Cookie\r\nVary: Accept-Language\r\nContent-Length: ${body.length}\r\n\r\n${body}`)
    const side = endpoint(url, 2000)
    try {
      const exchange = await side.send('HEAD', '/api/v2/images/?limit=1', { 'user-agent': 't' })
      expect(exchange).toMatchObject({ ok: true, answer: { status: 200, headers: { 'content-type': 'application/json', vary: 'Accept, Cookie, Accept-Language' } } })
      expect(exchange.ok && exchange.answer.body.length).toBe(0)
    } finally {
      side.close()
    }
  })

  it('sends the Host given in the headers instead of the URL\'s, on GET and HEAD alike', async () => {
    const { url, received } = await rawServer('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n')
    const side = endpoint(url, 2000)
    try {
      for (const method of ['GET', 'HEAD'] as const) {
        const exchange = await side.send(method, '/api/v2/pages/?x=%00', { host: 'partner.localhost:8701', 'user-agent': 't' })
        expect(exchange.ok && exchange.answer.status).toBe(404)
      }
      expect(received).toHaveLength(2)
      for (const request of received) {
        expect(request).toMatch(/^(GET|HEAD) \/api\/v2\/pages\/\?x=%00 HTTP\/1\.1\r\n/)
        expect(request.match(/^host: .*$/gim)).toEqual(['host: partner.localhost:8701'])
      }
    } finally {
      side.close()
    }
  })

  it('reports a HEAD without an answer as failed, not as an answer', async () => {
    const { url } = await rawServer('garbage\r\n\r\n')
    const side = endpoint(url, 2000)
    try {
      expect(await side.send('HEAD', '/', {})).toMatchObject({ ok: false })
    } finally {
      side.close()
    }
  })
})
