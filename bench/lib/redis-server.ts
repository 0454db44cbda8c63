/**
 * A private `redis-server` for the scenarios that run a cluster (`edits`): on a free port of
 * 127.0.0.1, keeping nothing on disk, on the harness's CPU when pinned (it is not what is
 * measured), killed on every way out; and its `INFO stats` counters.
 * @module
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { Redis } from 'ioredis'
import { freePort, waitFor } from './http.js'

export interface BenchRedis {
  readonly url: string
  /** A command connection for the harness's own reads (INFO, LRANGE). */
  readonly client: Redis
  /** `total_net_input_bytes` of `INFO stats`: every byte every client sent to the server. */
  inputBytes(): Promise<number>
  stop(): Promise<void>
}

const running = new Set<ChildProcess>()
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL')
})

export async function startBenchRedis(cpu: number | undefined): Promise<BenchRedis> {
  const port = await freePort()
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no']
  const [command, argv] = cpu === undefined ? ['redis-server', args] : ['taskset', ['-c', String(cpu), 'redis-server', ...args]]
  const child = spawn(command, argv, { stdio: 'ignore' })
  running.add(child)
  child.once('exit', () => running.delete(child))
  const url = `redis://127.0.0.1:${port}`
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 })
  // Refused until the server listens: the wait below retries.
  client.on('error', () => undefined)
  await waitFor('redis-server PONG', 10_000, 50, async () => {
    if (client.status !== 'ready') await client.connect().catch(() => undefined)
    return (await client.ping().catch(() => undefined)) === 'PONG' ? true : undefined
  })
  return {
    url,
    client,
    async inputBytes() {
      const stats = await client.info('stats')
      const match = /total_net_input_bytes:(\d+)/.exec(stats)
      if (!match) throw new Error('INFO stats has no total_net_input_bytes')
      return Number(match[1])
    },
    async stop() {
      client.disconnect()
      if (child.exitCode !== null || child.signalCode !== null) return
      const exited = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGTERM')
      await exited
    },
  }
}
