/**
 * A TCP port on 127.0.0.1 that was free a moment ago, for a child process to listen on. Another
 * process may take it in between; callers that can, retry.
 */
import { once } from 'node:events'
import { createServer } from 'node:net'

export async function freePort(): Promise<number> {
  const server = createServer()
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const address = server.address()
  server.close()
  await once(server, 'close')
  if (address === null || typeof address === 'string') throw new Error('could not find a free port')
  return address.port
}
