/**
 * Which snapshot each instance serves, recorded in Redis, so the syncing instance can purge a CDN
 * only once every instance serves the new tree (docs/architecture.md#purging-a-cdn-after-every-instance-serves).
 * A purge sent while one follower still serves the old tree lets the CDN fetch the old answer
 * from that follower and keep it for hours; waiting costs the purge about one snapshot load.
 *
 * Every instance keeps one field of a hash, `${REDIS_PREFIX}served`: its id → JSON
 * `{ fingerprint, at }`, written when it swaps a snapshot in and again every heartbeat. A field
 * not written for `staleAfterMs` is an instance that died (or cannot reach Redis): it is deleted
 * and not waited for, so a crashed follower holds a purge at most that long. A stopped instance
 * deletes its own field.
 *
 * `at` is the writer's clock and the reader judges it by its own: instances must agree on the
 * time to well within `staleAfterMs` (NTP does; the default is the lease period, seconds).
 *
 * Fingerprints can be compared across instances with different BASE_URLs: a rebased snapshot
 * keeps the digests the syncing instance stored, so its fingerprint is the stored one
 * (`persist/rebase-snapshot.ts`).
 *
 * Every Redis call is bounded by `commandTimeoutMs`; nothing here throws, and a Redis that cannot
 * answer never holds a wait: it ends at once, not confirmed.
 * @module
 */
import { boundedCommand } from '../cache/stores/bounded-command.js'
import type { ClusterLogger, ScriptRedis } from './redis-commands.js'
import { realTimers, type Timers } from '../timers.js'

/** The one command sent: a script. */
export type ServedVersionsRedis = ScriptRedis

export type ServedVersionsLogger = ClusterLogger

export interface ServedVersionsOptions {
  readonly redis: ServedVersionsRedis
  /** The hash, e.g. `${REDIS_PREFIX}served`. */
  readonly key: string
  /** This instance's id (the lease owner), its field in the hash. */
  readonly owner: string
  /** How often the field is written again while nothing changes. */
  readonly heartbeatMs: number
  /** A field older than this is a dead instance's (default: three heartbeats). */
  readonly staleAfterMs?: number
  /** How often a wait reads the hash (default 50 ms). */
  readonly waitPollMs?: number
  readonly commandTimeoutMs: number
  readonly now: () => number
  readonly timers?: Timers
  readonly logger: ServedVersionsLogger
}

export interface ServedWait {
  /** Every live instance served the fingerprint (or a newer snapshot of this instance's) when the wait ended. */
  readonly allServe: boolean
  /** The live instances still serving something else then (their ids). */
  readonly lagging: readonly string[]
  readonly waitedMs: number
  /** Why not all: the time ran out, Redis could not answer, or this instance stopped. */
  readonly reason?: 'timeout' | 'redis' | 'stopped'
}

export interface ServedVersions {
  /** This instance now serves `fingerprint`: recorded at once once started, and at every heartbeat. */
  report(fingerprint: string): void
  /** Writes the field now (if a fingerprint was reported) and then every heartbeat. */
  start(): void
  /**
   * Reads the hash every `waitPollMs` until every live instance serves `fingerprint` or a snapshot
   * this instance reported after it (a follower may skip straight to the newest), for at most
   * `timeoutMs`. Never rejects.
   */
  waitForAll(fingerprint: string, timeoutMs: number): Promise<ServedWait>
  /** Stops the heartbeat, ends waits, and deletes this instance's field. */
  stop(): Promise<void>
  /** Stops the heartbeat without deleting the field, as a crash would. For tests. */
  abandon(): void
}

/** Writes this instance's field and keeps the hash from outliving every instance by much. */
const REPORT_SCRIPT = `redis.call('hset', KEYS[1], ARGV[1], ARGV[2]) return redis.call('pexpire', KEYS[1], ARGV[3])`

/**
 * Returns the live fields (id, value, id, value…) and deletes the rest in the same step: a field
 * written before ARGV[1] (ms), or unreadable. Atomic, so a field rewritten meanwhile is never deleted.
 */
const LIVE_SCRIPT = `
local all = redis.call('hgetall', KEYS[1])
local live = {}
local cutoff = tonumber(ARGV[1])
for i = 1, #all, 2 do
  local ok, value = pcall(cjson.decode, all[i + 1])
  if ok and type(value) == 'table' and type(value.at) == 'number' and type(value.fingerprint) == 'string' and value.at >= cutoff then
    live[#live + 1] = all[i]
    live[#live + 1] = all[i + 1]
  else
    redis.call('hdel', KEYS[1], all[i])
  end
end
return live`

const DELETE_SCRIPT = `return redis.call('hdel', KEYS[1], ARGV[1])`

/** The script checked the record's shape; this only guards against a JSON dialect difference. */
function fingerprintOf(text: string): string | undefined {
  try {
    const { fingerprint } = JSON.parse(text) as { fingerprint?: unknown }
    return typeof fingerprint === 'string' ? fingerprint : undefined
  } catch {
    return undefined
  }
}

/** How many of its own latest fingerprints an instance remembers, to accept followers that skipped ahead. */
const OWN_HISTORY = 32

export function createServedVersions(options: ServedVersionsOptions): ServedVersions {
  const { redis, key, owner, heartbeatMs, commandTimeoutMs, now, logger } = options
  if (!(heartbeatMs > 0)) throw new TypeError(`expected heartbeatMs to be a positive number, got ${String(heartbeatMs)}`)
  if (!(commandTimeoutMs > 0)) throw new TypeError(`expected commandTimeoutMs to be a positive number, got ${String(commandTimeoutMs)}`)
  if (key === '' || owner === '') throw new TypeError('expected a non-empty key and owner')
  const timers = options.timers ?? realTimers
  const staleAfterMs = options.staleAfterMs ?? 3 * heartbeatMs
  const waitPollMs = options.waitPollMs ?? 50
  const keyTtlMs = Math.ceil(staleAfterMs * 4)

  /** What this instance reported, oldest first; the last is what it serves. */
  const history: string[] = []
  let started = false
  let finished = false
  let timer: unknown
  let failing = false
  /** The write in flight, awaited before `stop()` deletes the field so it cannot come back after. */
  let writing: Promise<void> | undefined
  const sleepers = new Set<() => void>()

  function write(): Promise<void> {
    const running = send().finally(() => {
      if (writing === running) writing = undefined
    })
    writing = running
    return running
  }

  async function send(): Promise<void> {
    const fingerprint = history.at(-1)
    if (fingerprint === undefined || finished) return
    const value = JSON.stringify({ fingerprint, at: now() })
    try {
      await boundedCommand('report served snapshot', () => redis.eval(REPORT_SCRIPT, 1, key, owner, value, keyTtlMs), commandTimeoutMs, timers)
      if (failing) {
        failing = false
        logger.info({ key, owner }, 'served versions: recording again which snapshot this instance serves')
      }
    } catch (error) {
      if (!failing) {
        failing = true
        logger.warn({ err: error, key, owner }, 'served versions: could not record which snapshot this instance serves; the syncing instance stops waiting for it once it ages out')
      }
    }
  }

  function beat(): void {
    timer = undefined
    if (finished) return
    void write().finally(() => {
      if (!finished) timer = timers.setTimeout(beat, heartbeatMs)
    })
  }

  /** The live instances' fingerprints, or undefined when Redis did not answer. */
  async function live(): Promise<Map<string, string> | undefined> {
    let answer: unknown
    try {
      answer = await boundedCommand('read served snapshots', () => redis.eval(LIVE_SCRIPT, 1, key, now() - staleAfterMs), commandTimeoutMs, timers)
    } catch (error) {
      logger.warn({ err: error, key }, 'served versions: Redis cannot say which snapshot each instance serves; not waiting')
      return undefined
    }
    const serving = new Map<string, string>()
    if (!Array.isArray(answer)) return serving
    for (let i = 0; i + 1 < answer.length; i += 2) {
      const [id, text] = [answer[i] as unknown, answer[i + 1] as unknown]
      if (typeof id !== 'string' || typeof text !== 'string') continue
      const fingerprint = fingerprintOf(text)
      if (fingerprint !== undefined) serving.set(id, fingerprint)
    }
    return serving
  }

  function sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        sleepers.delete(wake)
        timers.clearTimeout(handle)
        resolve()
      }
      const handle = timers.setTimeout(wake, ms)
      sleepers.add(wake)
    })
  }

  /** The fingerprint and every one this instance reported after it (all acceptable: as new or newer). */
  function acceptable(fingerprint: string): Set<string> {
    const from = history.lastIndexOf(fingerprint)
    return new Set([fingerprint, ...(from < 0 ? [] : history.slice(from + 1))])
  }

  function halt(): void {
    finished = true
    if (timer !== undefined) {
      timers.clearTimeout(timer)
      timer = undefined
    }
    for (const wake of [...sleepers]) wake()
  }

  return {
    report(fingerprint) {
      if (history.at(-1) === fingerprint) return
      history.push(fingerprint)
      if (history.length > OWN_HISTORY) history.shift()
      if (started && !finished) void write()
    },
    start() {
      if (started || finished) return
      started = true
      beat()
    },
    async waitForAll(fingerprint, timeoutMs) {
      const startedAt = now()
      const waited = () => Math.max(0, now() - startedAt)
      for (;;) {
        if (finished) return { allServe: false, lagging: [], waitedMs: waited(), reason: 'stopped' }
        const serving = await live()
        if (!serving) return { allServe: false, lagging: [], waitedMs: waited(), reason: 'redis' }
        const accepted = acceptable(fingerprint)
        const lagging = [...serving].filter(([, served]) => !accepted.has(served)).map(([id]) => id).sort()
        if (lagging.length === 0) return { allServe: true, lagging, waitedMs: waited() }
        const left = timeoutMs - waited()
        if (left <= 0) return { allServe: false, lagging, waitedMs: waited(), reason: 'timeout' }
        await sleep(Math.min(waitPollMs, left))
      }
    },
    async stop() {
      if (finished) return
      halt()
      await writing
      try {
        await boundedCommand('delete served snapshot', () => redis.eval(DELETE_SCRIPT, 1, key, owner), commandTimeoutMs, timers)
      } catch (error) {
        logger.warn({ err: error, key, owner }, 'served versions: could not delete this instance\'s record; it ages out')
      }
    },
    abandon: halt,
  }
}
