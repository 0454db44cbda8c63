/**
 * Real Redis servers for tests. `startRedis()` always starts a private `redis-server` child on a
 * free port of 127.0.0.1, for tests that stop, kill, pause or restart it; `sharedRedisUrl()` reuses
 * a Redis already listening on 127.0.0.1:6379 (or starts one private server per process) for
 * tests that only need a Redis. Every child is SIGKILLed when the process exits.
 */
import type { ChildProcess } from 'node:child_process'
import { createConnection } from 'node:net'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import { afterAll, afterEach, beforeAll } from 'vitest'
import { freePort } from './free-port.js'
import { startChildServer, stopChild } from './child-server.js'

export interface RedisServer {
  /** `redis://127.0.0.1:<port>` */
  readonly url: string
  readonly port: number
  /** True: this process started the server and may stop it (always, for `startRedis`). */
  readonly owned: boolean
  /** SIGTERM, then SIGKILL if it has not exited within 3 s. */
  stop(): Promise<void>
  /** SIGKILL: the connection drops as it would on a crash. */
  kill(): Promise<void>
  /** Starts it again on the same port (stopping it first if it runs) and waits for PING. */
  restart(): Promise<void>
  /** SIGSTOP: connections stay open but nothing answers, as with a hung or overloaded Redis. */
  pause(): void
  /** SIGCONT */
  resume(): void
}

const STARTUP_DEADLINE_MS = 5000
const SHARED_URL = 'redis://127.0.0.1:6379'

export async function startRedis(): Promise<RedisServer> {
  let port = await freePort()
  let child: ChildProcess
  // The free port can be taken between finding it and Redis binding it; try another then.
  for (let attempt = 1; ; attempt++) {
    try {
      child = await launch(port)
      break
    } catch (error) {
      if (attempt === 3 || !/address already in use/i.test(String(error))) throw error
      port = await freePort()
    }
  }
  const terminate = (signal: NodeJS.Signals) => stopChild(child, signal)
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    owned: true,
    stop: () => terminate('SIGTERM'),
    kill: () => terminate('SIGKILL'),
    async restart() {
      await terminate('SIGKILL')
      child = await launch(port)
    },
    pause: () => void child.kill('SIGSTOP'),
    resume: () => void child.kill('SIGCONT'),
  }
}

let shared: Promise<string> | undefined

/** A Redis URL for tests that only need a Redis: the one on 6379 if it answers, else a private one per process. */
export function sharedRedisUrl(): Promise<string> {
  shared ??= (async () => ((await ping(6379, 300)) ? SHARED_URL : (await startRedis()).url))().catch((error: unknown) => {
    shared = undefined
    throw error
  })
  return shared
}

/** Whether something on 127.0.0.1:`port` answers PING with PONG within `timeoutMs`. */
export function ping(port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port })
    let received = ''
    const done = (answer: boolean) => {
      clearTimeout(timer)
      socket.destroy()
      resolve(answer)
    }
    const timer = setTimeout(() => done(false), timeoutMs)
    socket.on('connect', () => socket.write('PING\r\n'))
    socket.on('data', (chunk) => {
      received += chunk.toString('latin1')
      if (received.includes('\r\n')) done(received.startsWith('+PONG'))
    })
    socket.on('error', () => done(false))
    socket.on('close', () => done(false))
  })
}

async function launch(port: number, extraArgs: readonly string[] = [], dir: string = tmpdir()): Promise<ChildProcess> {
  const binary = process.env.REDIS_SERVER_BIN ?? 'redis-server'
  return startChildServer({
    binary,
    // No persistence: nothing is written to disk and a restarted server starts empty.
    args: ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, ...extraArgs],
    name: `redis-server on port ${port}`,
    ready: () => ping(port, 250),
    deadlineMs: STARTUP_DEADLINE_MS,
    missing: () => new Error(`cannot start Redis for the tests: no '${binary}' binary on PATH; install it with \`apt-get install -y redis-server\` (or set REDIS_SERVER_BIN)`),
  })
}


/**
 * A Redis server of the calling suite's own, to kill, pause and restart without disturbing other
 * suites: started before the suite, resumed after each test (one may leave it paused), stopped
 * after the suite. Call it inside `describe`; read the server through the returned function.
 */
export function ownRedisServer(): () => RedisServer {
  let server: RedisServer | undefined
  beforeAll(async () => {
    server = await startRedis()
  })
  afterEach(() => {
    server?.resume()
  })
  afterAll(async () => {
    await server?.stop()
  })
  return () => {
    if (server === undefined) throw new Error('ownRedisServer: read before the suite started')
    return server
  }
}

export interface RedisCluster {
  /** `127.0.0.1:<port>,…`, as REDIS_CLUSTER_NODES takes them. */
  readonly nodes: string
  readonly ports: readonly number[]
  stop(): Promise<void>
}

const CLUSTER_SLOTS = 16384
/**
 * Redis reports a new cluster ok no sooner than 2 s after a node started (it waits before taking
 * writes), and later on a busy machine: 2.3–4.2 s measured with two cores kept busy.
 */
const CLUSTER_DEADLINE_MS = 20_000

/**
 * A Redis Cluster of `masters` private servers on free ports, the slots split evenly, no replicas:
 * each started with cluster mode on, given its slots (`CLUSTER ADDSLOTSRANGE`) and introduced to
 * the first (`CLUSTER MEET`); resolves once every node reports `cluster_state:ok`.
 */
export async function startRedisCluster(masters = 3): Promise<RedisCluster> {
  const children: ChildProcess[] = []
  const dirs: string[] = []
  const stop = async () => {
    await Promise.all(children.map((child) => stopChild(child, 'SIGKILL')))
    await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })))
  }
  try {
    const ports: number[] = []
    const busPorts: number[] = []
    for (let i = 0; i < masters; i++) {
      const port = await freePort()
      // The bus port defaults to port + 10000, which may be taken or past 65535: pick one too.
      const busPort = await freePort()
      const dir = await mkdtemp(join(tmpdir(), 'cms-shield-redis-cluster-'))
      dirs.push(dir)
      children.push(await launch(port, ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-port', String(busPort)], dir))
      ports.push(port)
      busPorts.push(busPort)
    }
    const admins = ports.map((port) => new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0 }))
    try {
      const per = Math.ceil(CLUSTER_SLOTS / masters)
      for (const [i, admin] of admins.entries()) {
        const first = i * per
        await admin.call('CLUSTER', 'ADDSLOTSRANGE', first, Math.min(CLUSTER_SLOTS, first + per) - 1)
        if (i > 0) await admins[0]!.call('CLUSTER', 'MEET', '127.0.0.1', ports[i]!, busPorts[i]!)
      }
      const deadline = Date.now() + CLUSTER_DEADLINE_MS
      for (;;) {
        const states = await Promise.all(admins.map((admin) => admin.call('CLUSTER', 'INFO') as Promise<string>))
        if (states.every((info) => info.includes('cluster_state:ok'))) break
        if (Date.now() > deadline) throw new Error(`Redis Cluster on ports ${ports.join(', ')} not ok within ${CLUSTER_DEADLINE_MS} ms`)
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
    } finally {
      for (const admin of admins) admin.disconnect()
    }
    return { nodes: ports.map((port) => `127.0.0.1:${port}`).join(','), ports, stop }
  } catch (error) {
    await stop()
    throw error
  }
}
