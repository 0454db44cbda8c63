/**
 * One syncing instance among many (docs/architecture.md#the-cluster: with Redis, exactly one instance syncs, holding a lease in
 * Redis). Each instance ticks every third of `LEADER_LEASE`: a follower tries to take the lease
 * (`SET key owner PX lease NX`), the leader renews it with a compare-and-expire script that also
 * takes the key again when nobody holds it, so a leader that dies is replaced one tick after its
 * lease expires, a leader whose key was taken over steps down at its next tick, and a leader whose
 * key Redis lost (a restart without persistence) keeps leading if it asks first.
 *
 * Redis must never decide alone that nobody syncs. When Redis cannot answer, a leader keeps
 * leading while the lease it last renewed is still running (no one else can have it), and after
 * that — or at once for a follower — the instance turns `standalone`: it syncs by itself, so every
 * tree stays fresh while Redis is down, at the cost of one CMS sync per instance. The first tick
 * that reaches Redis again resolves to leader or follower; the cluster runs one as soon as the
 * connection is ready. If Redis came back without its data, a standalone instance may take the
 * lease before the old leader renews: both then sync until the old leader's tick finds the key
 * not its own, moments later.
 *
 * Every Redis call is bounded by `commandTimeoutMs`; nothing here throws from a timer or leaves a
 * rejection unhandled.
 * @module
 */
import { boundedCommand } from '../cache/stores/bounded-command.js'
import { realTimers, type Timers } from '../timers.js'
import type { ClusterLogger, ScriptRedis } from './redis-commands.js'

export type LeaseRole = 'leader' | 'follower' | 'standalone'

/** The two commands the lease sends: a script, and taking the key. */
export interface LeaseRedis extends ScriptRedis {
  set(key: string, value: string, millisecondsToken: 'PX', milliseconds: number, nx: 'NX'): Promise<'OK' | null>
}

export type LeaderLeaseLogger = ClusterLogger

export interface LeaderLeaseOptions {
  readonly redis: LeaseRedis
  /** The lease's key, e.g. `${REDIS_PREFIX}leader`. */
  readonly key: string
  /** This instance's id, unique among the instances (stored as the key's value). */
  readonly owner: string
  /** `LEADER_LEASE`: how long a lease lasts unless renewed; ticks come every third of it. */
  readonly leaseMs: number
  /** Each Redis call is abandoned after this; a timeout counts as an error. */
  readonly commandTimeoutMs: number
  readonly now: () => number
  /** Drives the ticks and the command timeouts; default: real, unref'd timers. */
  readonly timers?: Timers
  readonly logger: LeaderLeaseLogger
  /** Called on every change of role (never twice with the same role); a throw is logged, not propagated. */
  readonly onRoleChange?: (role: LeaseRole, previous: LeaseRole) => void
}

export interface LeaderLease {
  /** 'follower' until the first tick has an answer. */
  readonly role: LeaseRole
  readonly owner: string
  /** Ticks at once, then every `leaseMs / 3`. Does nothing after `stop()` or `abandon()`. */
  start(): void
  /**
   * Runs one tick now (joining one already running) and resolves with the role after it. Works
   * without `start()`; after `stop()` or `abandon()` it only answers the current role.
   */
  checkNow(): Promise<LeaseRole>
  /**
   * Ticks now if started and not stopped, else does nothing: for a connection to Redis that is
   * ready again, so roles settle at once rather than a tick later.
   */
  reconnected(): void
  /**
   * Stops ticking, waits for a tick in flight, and deletes the key if it still holds this owner
   * (compare-and-delete), so another instance can take over at its next tick instead of after the
   * lease expires. The role then turns 'follower' (`onRoleChange` fires if it was not).
   */
  stop(): Promise<void>
  /** Stops ticking WITHOUT releasing, as a crash would; the role is left as it was. For tests. */
  abandon(): void
}

/**
 * Renews the lease if it is still ours (1), takes it again if nobody holds it (2: it expired, or
 * Redis came back without its data), and leaves it to whoever else holds it (0).
 */
const RENEW_SCRIPT = `local holder = redis.call('get', KEYS[1])
if holder == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end
if not holder then redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 2 end
return 0`

/** Deletes the lease only if it is still ours: 1 when deleted, else 0. */
const RELEASE_SCRIPT = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`

export function createLeaderLease(options: LeaderLeaseOptions): LeaderLease {
  const { redis, key, owner, leaseMs, commandTimeoutMs, now, logger, onRoleChange } = options
  if (!(Number.isFinite(leaseMs) && leaseMs >= 3)) throw new TypeError(`expected leaseMs to be a number of milliseconds >= 3, got ${String(leaseMs)}`)
  if (!(commandTimeoutMs > 0)) throw new TypeError(`expected commandTimeoutMs to be a positive number, got ${String(commandTimeoutMs)}`)
  if (key === '') throw new TypeError('expected a non-empty lease key')
  if (owner === '') throw new TypeError('expected a non-empty lease owner')
  const timers = options.timers ?? realTimers
  const px = Math.ceil(leaseMs)
  const tickMs = Math.max(1, Math.floor(leaseMs / 3))

  let role: LeaseRole = 'follower'
  /** When the last successful acquire or renew was sent: the lease runs at least until this + leaseMs. */
  let heldSince: number | undefined
  let started = false
  let finished = false
  let timer: unknown
  let inFlight: Promise<LeaseRole> | undefined
  let stopping: Promise<void> | undefined
  /** Set while a leader's renewals fail inside its lease, so that is logged once, not every tick. */
  let renewFailing = false

  function change(next: LeaseRole, level: 'info' | 'warn', details: object, message: string): void {
    if (next === role) return
    const previous = role
    role = next
    if (next !== 'leader') heldSince = undefined
    renewFailing = false
    logger[level]({ key, owner, role: next, previous, ...details }, message)
    try {
      onRoleChange?.(next, previous)
    } catch (error) {
      logger.warn({ err: error, role: next, previous }, 'leader lease: onRoleChange threw')
    }
  }

  async function tick(): Promise<LeaseRole> {
    const sentAt = now()
    try {
      if (role === 'leader') {
        const renewed = Number(await boundedCommand('renew lease', () => redis.eval(RENEW_SCRIPT, 1, key, owner, px), commandTimeoutMs, timers))
        if (renewed === 1 || renewed === 2) {
          heldSince = sentAt
          if (renewed === 2) logger.info({ key, owner }, 'leader lease: the key was gone (expired, or Redis lost it); taken again')
          else if (renewFailing) logger.info({ key, owner }, 'leader lease: renewing again')
          renewFailing = false
        } else {
          change('follower', 'warn', {}, 'leader lease lost: another instance holds it (or it expired); no longer syncing')
        }
      } else {
        const answer = await boundedCommand('acquire lease', () => redis.set(key, owner, 'PX', px, 'NX'), commandTimeoutMs, timers)
        if (answer === 'OK') {
          heldSince = sentAt
          change('leader', 'info', {}, 'leader lease acquired: this instance syncs')
        } else {
          change('follower', 'info', {}, 'leader lease held by another instance: following')
        }
      }
    } catch (error) {
      if (role === 'leader' && heldSince !== undefined && now() - heldSince < leaseMs) {
        if (!renewFailing) {
          renewFailing = true
          logger.warn({ err: error, key, owner, expiresInMs: heldSince + leaseMs - now() }, 'leader lease: redis did not renew it; still leading until it expires')
        }
      } else {
        change('standalone', 'info', { err: error }, 'leader lease: redis cannot say who leads; syncing standalone until it answers')
      }
    }
    return role
  }

  function checkNow(): Promise<LeaseRole> {
    if (finished) return Promise.resolve(role)
    if (inFlight) return inFlight
    const running = tick()
      .catch((error: unknown) => {
        // Only a throwing logger gets here; the role is left as it was.
        void error
        return role
      })
      .finally(() => {
        if (inFlight === running) inFlight = undefined
      })
    inFlight = running
    return running
  }

  function loop(): void {
    timer = undefined
    if (finished) return
    const startedAt = now()
    const next = () => {
      if (finished) return
      // Keep the cadence whatever the tick took (up to commandTimeoutMs).
      const elapsed = now() - startedAt
      timer = timers.setTimeout(loop, Math.max(0, Math.min(tickMs, tickMs - elapsed)))
    }
    checkNow().then(next, next)
  }

  function halt(): void {
    finished = true
    if (timer !== undefined) {
      timers.clearTimeout(timer)
      timer = undefined
    }
  }

  return {
    get role() {
      return role
    },
    owner,
    start() {
      if (started || finished) return
      started = true
      loop()
    },
    checkNow,
    reconnected() {
      if (!started || finished) return
      // A tick in flight went out before the connection was back: tick again after it.
      const after = inFlight ?? Promise.resolve(role)
      void after.then(() => checkNow())
    },
    stop() {
      stopping ??= (async () => {
        halt()
        await inFlight?.catch(() => undefined)
        // Always compare-and-delete: even a follower or standalone instance may hold the key when an
        // acquire reached Redis but its answer timed out. It never deletes another owner's lease.
        try {
          const released = await boundedCommand('release lease', () => redis.eval(RELEASE_SCRIPT, 1, key, owner), commandTimeoutMs, timers)
          if (Number(released) === 1) logger.info({ key, owner }, 'leader lease released')
        } catch (error) {
          if (role !== 'follower') logger.warn({ err: error, key, owner }, 'leader lease: could not release it; it expires by itself')
        }
        change('follower', 'info', {}, 'leader lease: stopped; no longer syncing')
      })().catch(() => undefined)
      return stopping
    },
    abandon() {
      halt()
    },
  }
}
