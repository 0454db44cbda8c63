/**
 * The Redis store's promise that Redis problems never reach a caller, against a fake client that
 * fails, hangs or answers junk on demand (test/integration/redis-store.test.ts does the same
 * against a real Redis that is killed and restarted).
 */
import { describe, expect, it } from 'vitest'
import { faultyCommands } from '../../../test/helpers/faulty-commands.js'
import type { StoreEventMap } from './cache-store.js'
import { encodeEntry } from './entry-codec.js'
import { createRedisStore, RedisCommandTimeoutError, type RedisCommands } from './redis-store.js'

function fakeRedis() {
  const data = new Map<string, { value: Buffer; px?: number }>()
  const { state, run } = faultyCommands()
  const redis: RedisCommands = {
    getBuffer: (key) => run(`get ${key}`, () => data.get(key)?.value ?? null),
    set: (key: string, value: Buffer, _px?: 'PX', ms?: number) =>
      run(`set ${key}${ms === undefined ? '' : ` PX ${ms}`}`, () => void data.set(key, ms === undefined ? { value } : { value, px: ms })),
    del: (key) => run(`del ${key}`, () => (data.delete(key) ? 1 : 0)),
  }
  return { redis, data, state }
}

function collect(store: ReturnType<typeof createRedisStore>) {
  const seen: Array<[keyof StoreEventMap, StoreEventMap[keyof StoreEventMap]]> = []
  for (const name of ['hit', 'miss', 'error'] as const) store.on(name, (event) => seen.push([name, event]))
  return seen
}

const options = { prefix: 'p:', commandTimeoutMs: 50, now: () => 0 }

describe('redis store', () => {
  it('writes one prefixed string per key with PX, and reads it back', async () => {
    const fake = fakeRedis()
    const store = createRedisStore({ redis: fake.redis, ...options })
    await store.set('k', { value: Buffer.from('body'), storedAt: 7, meta: { status: 200 } }, 1500.2)
    expect(fake.state.calls).toEqual(['set p:k PX 1501'])
    expect(await store.get('k')).toEqual({ value: Buffer.from('body'), storedAt: 7, meta: { status: 200 } })
    await store.set('k', { value: Buffer.from('x'), storedAt: 8 }, 0)
    expect(fake.state.calls.at(-1)).toBe('del p:k')
    expect(await store.get('k')).toBeUndefined()
  })

  it.each(['fail', 'throw'] as const)('answers a miss / no-op when the client %s, and reports it', async (mode) => {
    const fake = fakeRedis()
    const store = createRedisStore({ redis: fake.redis, ...options })
    const seen = collect(store)
    fake.state.mode = mode
    await expect(store.get('k')).resolves.toBeUndefined()
    await expect(store.set('k', { value: Buffer.from('v'), storedAt: 0 }, 1000)).resolves.toBeUndefined()
    await expect(store.delete('k')).resolves.toBeUndefined()
    expect(store.errors).toBe(3)
    expect(seen.map(([name, event]) => [name, 'operation' in event ? event.operation : 'reason' in event ? event.reason : ''])).toEqual([
      ['error', 'get'],
      ['miss', 'error'],
      ['error', 'set'],
      ['error', 'delete'],
    ])
  })

  it('gives up on a command after commandTimeoutMs even when the client would wait forever', async () => {
    const fake = fakeRedis()
    const store = createRedisStore({ redis: fake.redis, ...options })
    const seen = collect(store)
    fake.state.mode = 'hang'
    const started = performance.now()
    const results = await Promise.all([store.get('k'), store.set('k', { value: Buffer.from('v'), storedAt: 0 }, 1000), store.delete('k')])
    expect(performance.now() - started).toBeLessThan(50 + 200)
    expect(results).toEqual([undefined, undefined, undefined])
    const errors = seen.filter(([name]) => name === 'error').map(([, event]) => event as StoreEventMap['error'])
    expect(errors).toHaveLength(3)
    expect(errors.every((event) => event.timedOut && event.error instanceof RedisCommandTimeoutError)).toBe(true)
  })

  it('treats a value that is not an entry as a miss', async () => {
    const fake = fakeRedis()
    const store = createRedisStore({ redis: fake.redis, ...options })
    const seen = collect(store)
    fake.data.set('p:k', { value: Buffer.from('written by someone else') })
    expect(await store.get('k')).toBeUndefined()
    expect(store.errors).toBe(1)
    expect(seen.map(([name]) => name)).toEqual(['error', 'miss'])
    fake.data.set('p:k', { value: encodeEntry({ value: Buffer.from('ok'), storedAt: 1 }) })
    expect((await store.get('k'))?.value.toString()).toBe('ok')
  })

  it('logs when the tier starts failing and when it recovers, not every failure', async () => {
    const fake = fakeRedis()
    let time = 0
    const lines: string[] = []
    const logger = { warn: (_: object, message: string) => lines.push(`warn ${message}`), info: (details: object, message: string) => lines.push(`info ${message} ${JSON.stringify(details)}`) }
    const store = createRedisStore({ redis: fake.redis, ...options, now: () => time, logger })
    fake.state.mode = 'fail'
    for (let i = 0; i < 5; i++) await store.get('k')
    time += 3000
    fake.state.mode = 'ok'
    await store.get('k')
    await store.get('k')
    expect(lines).toEqual([
      'warn redis cache tier failing; answering from memory until it recovers',
      'info redis cache tier working again {"downMs":3000,"errors":5}',
    ])
  })
})
