/**
 * How long loading a stored snapshot takes, through the path a warm start takes
 * (`loadStoredChainAsync`: checksum, decompression, decoding, rebuild), in this process:
 *
 *   npx tsx scripts/load-snapshot-timing.ts <snapshot file> [--rounds 3] [--write-as brotli|gzip|none]
 *
 * The file is one written by SNAPSHOT_FILE (or a Redis snapshot key's value). With `--write-as`,
 * the loaded snapshot is also encoded again in the current format with that compression, its size
 * and encoding time printed, and loading that is timed too (docs/performance.md, "Warm start from Redis").
 * @module
 */
import { readFileSync } from 'node:fs'
import { performance } from 'node:perf_hooks'
import { parseArgs } from 'node:util'
import { loadStoredChainAsync } from '../src/persist/patch-chain.js'
import { readSnapshotMetadata, type SnapshotCompression } from '../src/persist/snapshot-codec.js'
import { encodeSnapshotOfAsync } from '../src/persist/snapshot-encoder.js'

const { values, positionals } = parseArgs({ allowPositionals: true, options: { rounds: { type: 'string', default: '3' }, 'write-as': { type: 'string' } } })
const file = positionals[0]
if (file === undefined) throw new Error('usage: load-snapshot-timing.ts <snapshot file> [--rounds 3] [--write-as brotli|gzip|none]')
const stored = readFileSync(file)
const metadata = readSnapshotMetadata(stored)
if (!metadata.ok) throw new Error(metadata.reason)
// The origin it was made for, so that nothing is refused or rebased.
const origin = { upstreamUrl: metadata.metadata.upstreamUrl, baseUrl: metadata.metadata.baseUrl }

async function timeLoad(label: string, buf: Buffer) {
  const cpu = process.cpuUsage()
  const started = performance.now()
  const loaded = await loadStoredChainAsync(buf, [], origin)
  const wallMs = performance.now() - started
  const used = process.cpuUsage(cpu)
  if (!loaded.result.ok) throw new Error(loaded.result.reason)
  console.log(JSON.stringify({ label, bytes: buf.length, pages: loaded.result.snapshot.pages.length, wallMs: Math.round(wallMs), cpuMs: Math.round((used.user + used.system) / 1000) }))
  return loaded.result.snapshot
}

const rounds = Number(values.rounds)
let snapshot = await timeLoad(`format ${metadata.metadata.formatVersion}`, stored)
for (let round = 1; round < rounds; round++) snapshot = await timeLoad(`format ${metadata.metadata.formatVersion}`, stored)
const writeAs = values['write-as'] as SnapshotCompression | undefined
if (writeAs !== undefined) {
  const cpu = process.cpuUsage()
  const started = performance.now()
  const again = await encodeSnapshotOfAsync(snapshot, origin, { compression: writeAs })
  const used = process.cpuUsage(cpu)
  // CPU of the whole process: the main thread and the thread pool's compression.
  console.log(JSON.stringify({ label: `encoded, ${writeAs}`, bytes: again.length, wallMs: Math.round(performance.now() - started), cpuMs: Math.round((used.user + used.system) / 1000) }))
  for (let round = 0; round < rounds; round++) {
    const loaded = await timeLoad(`current format, ${writeAs}`, again)
    if (loaded.fingerprint !== snapshot.fingerprint) throw new Error('the snapshot encoded again loads to another fingerprint')
  }
}
