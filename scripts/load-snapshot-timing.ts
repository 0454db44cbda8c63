/**
 * How long loading a stored snapshot takes, through the path a warm start takes
 * (`loadStoredChainAsync`: checksum, decompression, decoding, rebuild), in this process:
 *
 *   npx tsx scripts/load-snapshot-timing.ts <snapshot file> [--rounds 3] [--write-as brotli|gzip|none] [--edit]
 *
 * The file is one written by SNAPSHOT_FILE (or a Redis snapshot key's value). With `--write-as`,
 * the loaded snapshot is also encoded again in the current format with that compression, its size
 * and encoding time printed, and loading that is timed too (docs/performance.md, "Warm start from Redis").
 * With `--edit` as well, one page in the middle is then retitled (in place, as a refresh does:
 * `patchSnapshot`) and the result encoded by the same encoder, which reuses the groups that did
 * not change, and by a fresh one, which must give the same bytes (docs/performance.md, "Whole
 * saves that reuse").
 * @module
 */
import { performance } from 'node:perf_hooks'
import { parseArgs } from 'node:util'
import { loadStoredChainAsync } from '../src/persist/patch-chain.js'
import type { SnapshotCompression } from '../src/persist/snapshot-codec.js'
import { createSnapshotEncoder } from '../src/persist/snapshot-encoder.js'
import type { Snapshot } from '../src/tree/snapshot.js'
import { readStoredFile, retitled } from './snapshots/stored-snapshot.js'

const { values, positionals } = parseArgs({ allowPositionals: true, options: { rounds: { type: 'string', default: '3' }, 'write-as': { type: 'string' }, edit: { type: 'boolean', default: false } } })
const file = positionals[0]
if (file === undefined) throw new Error('usage: load-snapshot-timing.ts <snapshot file> [--rounds 3] [--write-as brotli|gzip|none] [--edit]')
const { stored, metadata, origin } = readStoredFile(file)

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
let snapshot = await timeLoad(`format ${metadata.formatVersion}`, stored)
for (let round = 1; round < rounds; round++) snapshot = await timeLoad(`format ${metadata.formatVersion}`, stored)
/** Encodes with `encoder`, printing CPU of the whole process: the main thread and the thread pool's compression. */
async function timeEncode(label: string, encoder: ReturnType<typeof createSnapshotEncoder>, snapshot: Snapshot, compression: SnapshotCompression) {
  const cpu = process.cpuUsage()
  const started = performance.now()
  const encoded = await encoder.encode(snapshot, origin, { compression })
  const used = process.cpuUsage(cpu)
  console.log(JSON.stringify({
    label, bytes: encoded.buf.length, groups: encoded.groups, reused: encoded.reused,
    wallMs: Math.round(performance.now() - started), cpuMs: Math.round((used.user + used.system) / 1000),
  }))
  return encoded.buf
}


const writeAs = values['write-as'] as SnapshotCompression | undefined
if (writeAs !== undefined) {
  const encoder = createSnapshotEncoder()
  const again = await timeEncode(`encoded, ${writeAs}, nothing kept`, encoder, snapshot, writeAs)
  for (let round = 0; round < rounds; round++) {
    const loaded = await timeLoad(`current format, ${writeAs}`, again)
    if (loaded.fingerprint !== snapshot.fingerprint) throw new Error('the snapshot encoded again loads to another fingerprint')
  }
  if (values.edit) {
    const next = retitled(snapshot)
    const reused = await timeEncode(`one page retitled, ${writeAs}, the previous encoding kept`, encoder, next, writeAs)
    const fresh = await timeEncode(`one page retitled, ${writeAs}, nothing kept`, createSnapshotEncoder(), next, writeAs)
    if (!reused.equals(fresh)) throw new Error('an encoder that kept the previous encoding wrote other bytes than a fresh one')
    const loaded = await timeLoad(`current format, ${writeAs}, after the edit`, reused)
    if (loaded.fingerprint !== next.fingerprint) throw new Error('the edited snapshot loads to another fingerprint')
  }
}
