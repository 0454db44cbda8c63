import { describe, expect, it, vi } from 'vitest'
import type { StoreEventMap } from './cache-store.js'
import { createMemoryStore } from './memory-store.js'

function clock(start = 1_000_000) {
  let time = start
  return { now: () => time, advance: (ms: number) => void (time += ms) }
}

const entry = (text: string, storedAt = 0) => ({ value: Buffer.from(text), storedAt })

describe('memory store', () => {
  it('gives back what was stored, meta and all', async () => {
    const store = createMemoryStore({ maxBytes: 1 << 20, now: clock().now })
    await store.set('k', { value: Buffer.from([0, 255, 10]), storedAt: 42, meta: { status: 200, etag: '"a"', cacheable: true } }, 1000)
    expect(await store.get('k')).toEqual({ value: Buffer.from([0, 255, 10]), storedAt: 42, meta: { status: 200, etag: '"a"', cacheable: true } })
    expect(await store.get('other')).toBeUndefined()
  })

  it('keeps an entry for ttlMs by the injected clock, not a moment longer', async () => {
    const time = clock()
    const store = createMemoryStore({ maxBytes: 1 << 20, now: time.now })
    await store.set('k', entry('v'), 1000)
    time.advance(999)
    expect(await store.get('k')).toBeDefined()
    time.advance(1)
    expect(await store.get('k')).toBeUndefined()
    expect(store.entries).toBe(0)
    expect(store.bytes).toBe(0)
  })

  it('restarts the ttl when an entry is replaced, and stores nothing for ttlMs <= 0', async () => {
    const time = clock()
    const store = createMemoryStore({ maxBytes: 1 << 20, now: time.now })
    await store.set('k', entry('old'), 1000)
    time.advance(900)
    await store.set('k', entry('new'), 1000)
    time.advance(900)
    expect((await store.get('k'))?.value.toString()).toBe('new')
    await store.set('k', entry('uncacheable'), 0)
    expect(await store.get('k')).toBeUndefined()
  })

  it('evicts the least recently used entries to stay under maxBytes', async () => {
    const store = createMemoryStore({ maxBytes: 3 * (1000 + 1 + 256), now: clock().now })
    const kilobyte = (fill: string) => ({ value: Buffer.alloc(1000, fill), storedAt: 0 })
    await store.set('a', kilobyte('a'), 60_000)
    await store.set('b', kilobyte('b'), 60_000)
    await store.set('c', kilobyte('c'), 60_000)
    expect(store.bytes).toBe(3 * 1257)
    await store.get('a') // now b is the least recently used
    await store.set('d', kilobyte('d'), 60_000)
    expect(await store.get('b')).toBeUndefined()
    expect(await store.get('a')).toBeDefined()
    expect(await store.get('d')).toBeDefined()
    expect(store.entries).toBe(3)
    expect(store.bytes).toBeLessThanOrEqual(3 * 1257)
  })

  it('counts keys and meta against the bound, and never keeps an entry larger than the bound', async () => {
    const store = createMemoryStore({ maxBytes: 2000, now: clock().now })
    await store.set('small', { value: Buffer.alloc(10), storedAt: 0, meta: { contentType: 'application/json' } }, 1000)
    expect(store.bytes).toBe(10 + 'small'.length + 'contentType'.length + 'application/json'.length + 256)
    await store.set('small', { value: Buffer.alloc(5000), storedAt: 0 }, 1000)
    expect(await store.get('small')).toBeUndefined()
    expect(store.bytes).toBe(0)
  })

  it('reports hits, misses and evictions', async () => {
    const time = clock()
    const store = createMemoryStore({ maxBytes: 2 * (100 + 1 + 256), now: time.now })
    const seen: Array<[keyof StoreEventMap, unknown]> = []
    for (const name of ['hit', 'miss', 'evict', 'error'] as const) store.on(name, (event) => seen.push([name, event]))
    const blob = { value: Buffer.alloc(100), storedAt: 0 }
    await store.set('a', blob, 1000)
    await store.get('a')
    await store.get('z')
    await store.set('b', blob, 1000)
    await store.set('c', blob, 1000)
    time.advance(1000)
    await store.get('c')
    expect(seen).toEqual([
      ['hit', { key: 'a' }],
      ['miss', { key: 'z', reason: 'absent' }],
      ['evict', { key: 'a', reason: 'size' }],
      ['evict', { key: 'c', reason: 'expired' }],
      ['miss', { key: 'c', reason: 'expired' }],
    ])
  })

  it('stops reporting to a listener that unsubscribed, and survives a listener that throws', async () => {
    const store = createMemoryStore({ maxBytes: 1 << 20, now: clock().now })
    let hits = 0
    const off = store.on('hit', () => (hits += 1))
    store.on('miss', () => {
      throw new Error('broken metrics')
    })
    await store.set('k', entry('v'), 1000)
    await store.get('k')
    off()
    await store.get('k')
    expect(hits).toBe(1)
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {})
    try {
      await expect(store.get('missing')).resolves.toBeUndefined()
      expect(warn).toHaveBeenCalledWith(expect.stringContaining('broken metrics'), 'CacheStoreListenerWarning')
    } finally {
      warn.mockRestore()
    }
  })
})
