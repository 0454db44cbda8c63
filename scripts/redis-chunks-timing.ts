/**
 * What a whole save sends Redis when the snapshot is stored by chunk, and what reading it back
 * costs, in this process against a local Redis (docs/performance.md, "Whole saves sent by chunk"):
 *
 *   npx tsx scripts/redis-chunks-timing.ts <snapshot file> [--redis redis://127.0.0.1:6379] [--rounds 3]
 *
 * Loads the file, encodes it and writes it through the Redis target (every chunk is new), retitles
 * one page in the middle (as a refresh does), encodes with the same encoder and writes again. For
 * each write (and the same edited snapshot written again by a target that trusts no manifest, as
 * another instance would): the bytes the target sent, Redis's `total_net_input_bytes` delta (noisy if others
 * use that Redis), the commands and pipelines sent and the time. Then reads the snapshot back
 * through the target (GET of the manifest, MGET of the chunks, digests checked) against a GET of
 * the same bytes stored whole. Every key is under a prefix of its own, removed at the end.
 * @module
 */
import { performance } from 'node:perf_hooks'
import { parseArgs } from 'node:util'
import { Redis } from 'ioredis'
import { createRedisSnapshotTarget } from '../src/cache/redis-snapshot-target.js'
import { loadStoredChainAsync } from '../src/persist/patch-chain.js'
import { createSnapshotEncoder } from '../src/persist/snapshot-encoder.js'
import type { Snapshot } from '../src/tree/snapshot.js'
import { readStoredFile, retitled } from './snapshots/stored-snapshot.js'

const { values, positionals } = parseArgs({ allowPositionals: true, options: { redis: { type: 'string', default: 'redis://127.0.0.1:6379' }, rounds: { type: 'string', default: '3' } } })
const file = positionals[0]
if (file === undefined) throw new Error('usage: redis-chunks-timing.ts <snapshot file> [--redis redis://127.0.0.1:6379] [--rounds 3]')
const { stored, origin } = readStoredFile(file)
const loaded = await loadStoredChainAsync(stored, [], origin)
if (!loaded.result.ok) throw new Error(loaded.result.reason)
const snapshot = loaded.result.snapshot

const prefix = `chunks-timing-${process.pid}-${Date.now()}:`
const client = new Redis(values.redis)
const admin = new Redis(values.redis)
/** Commands the target sends, a pipeline counting as one round trip with its commands counted apart. */
const counts = { roundTrips: 0, commands: 0 }
const counting = new Proxy(client, {
  get(real, property) {
    const value = Reflect.get(real, property) as unknown
    if (typeof value !== 'function') return value
    if (property === 'pipeline') {
      return (commands: unknown[][]) => {
        counts.roundTrips++
        counts.commands += commands.length
        return real.pipeline(commands)
      }
    }
    if (property === 'on' || property === 'once') return (value as (...args: unknown[]) => unknown).bind(real)
    return (...args: unknown[]) => {
      counts.roundTrips++
      counts.commands++
      return (value as (...args: unknown[]) => unknown).apply(real, args)
    }
  },
})
const targetOptions = { client: counting, prefix, timeoutMs: 30_000, logger: { info: () => undefined, warn: (details: object, message: string) => console.warn(message, details) } }
let target = createRedisSnapshotTarget(targetOptions)
const inputBytes = async () => Number(/total_net_input_bytes:(\d+)/.exec(await admin.info('stats'))![1])
const encoder = createSnapshotEncoder()

async function save(label: string, next: Snapshot, fresh = false) {
  // Another instance (or this one after TRUST_MS): it trusts no manifest, and asks about every chunk.
  if (fresh) target = createRedisSnapshotTarget(targetOptions)
  const encodeStarted = performance.now()
  const encoded = await encoder.encode(next, origin)
  const encodeMs = performance.now() - encodeStarted
  counts.roundTrips = 0
  counts.commands = 0
  const before = await inputBytes()
  const started = performance.now()
  const report = await target.write(encoded.buf, encoded.chunks)
  const writeMs = performance.now() - started
  const netInput = (await inputBytes()) - before
  console.log(JSON.stringify({
    label, bytes: encoded.buf.length, chunks: encoded.chunks?.length, groups: encoded.groups, reused: encoded.reused, encodeMs: Math.round(encodeMs),
    ...report, netInputBytes: netInput, roundTrips: counts.roundTrips, commands: counts.commands, writeMs: Math.round(writeMs),
  }))
  return encoded.buf
}

try {
  await save('first whole save (every chunk new)', snapshot)
  const edited = retitled(snapshot)
  const buf = await save('whole save after a one-page edit', edited)
  await save('the same whole save by another instance (nothing new; every chunk asked about)', edited, true)
  await admin.set(`${prefix}whole`, buf)
  for (let round = 0; round < Number(values.rounds); round++) {
    let started = performance.now()
    const read = await target.read()
    const chunkedMs = performance.now() - started
    if (!read?.equals(buf)) throw new Error('the snapshot read back by chunk is not the one written')
    started = performance.now()
    const whole = await admin.getBuffer(`${prefix}whole`)
    const wholeMs = performance.now() - started
    if (!whole?.equals(buf)) throw new Error('the whole snapshot read back is not the one written')
    console.log(JSON.stringify({ label: 'read back', bytes: buf.length, byChunkMs: Math.round(chunkedMs), wholeGetMs: Math.round(wholeMs) }))
  }
} finally {
  const keys: string[] = []
  for await (const batch of admin.scanStream({ match: `${prefix}*`, count: 1000 })) keys.push(...(batch as string[]))
  for (let at = 0; at < keys.length; at += 500) await admin.unlink(...keys.slice(at, at + 500))
  console.log(JSON.stringify({ removedKeys: keys.length }))
  client.disconnect()
  admin.disconnect()
}
