/**
 * How instances sharing a Redis tell each other about snapshots and refresh requests. Only the
 * leader syncs (leader-lease.ts); it writes each new snapshot to Redis itself, then
 * announces it here, and followers load it from Redis — never from the CMS. An announcement is
 * also recorded under a key, so a follower that missed the message (disconnected, just started)
 * finds it by polling `latestSnapshot()` on its lease ticks. The other way, a PURGE or webhook
 * received by any instance is published as a refresh request for the leader to act on.
 *
 * Pub/sub carries what other processes wrote, so every incoming message is validated strictly:
 * a malformed one is dropped with one warn log and never reaches a listener. Every Redis call is
 * bounded by `commandTimeoutMs` and never throws. The subscriber connection is shared (with
 * src/cache/shared-flight.ts): messages are filtered by channel name, and nothing here ever
 * unsubscribes a channel or removes a listener it did not add.
 *
 * Redis delivers a message to every subscriber, including the publishing instance's own: listeners
 * see this instance's announcements and refresh requests too, and filter on `owner` / `from` when
 * they must.
 * @module
 */
import { boundedCommand } from '../cache/stores/bounded-command.js'
import { subscribeUntilDone } from '../cache/stores/subscribe-until-done.js'
import type { LogSink } from '../observability/log-sink.js'

export interface SnapshotAnnouncement {
  /** Safe non-negative integer that identifies the snapshot (for instance its build time or a counter). */
  readonly version: number
  /** Non-empty; what followers compare with the snapshot they have. */
  readonly fingerprint: string
  /** The announcing instance's id. */
  readonly owner: string
  /**
   * When the announcing instance's last good sync ended (ms since the epoch), if it has had one:
   * the leader announces its snapshot again after each sync that changed nothing, so followers
   * can tell how recently the CMS confirmed the tree they serve.
   */
  readonly checkedAt?: number
  /**
   * Set when the snapshot was stored as a patch (`persist/snapshot-patch.ts`): the fingerprint it
   * applies to and its position in the stored patch log. A follower serving `from` reads that one
   * patch (and any after it) instead of the whole snapshot.
   */
  readonly patch?: { readonly from: string; readonly index: number }
}

export interface RefreshMessage {
  /** Pages to refresh: safe positive integers, at most `MAX_REFRESH_IDS`. */
  readonly ids?: readonly number[]
  /** Refresh everything. */
  readonly all?: boolean
  /** Refresh the listing (the tree's structure). */
  readonly listing?: boolean
  /** New generations of other endpoints' answers (`endpoint-generations.ts`), by endpoint: every instance adopts them. */
  readonly endpoints?: Readonly<Record<string, string>>
  /** Why, for the logs (e.g. `purge`, `webhook page_published`). */
  readonly reason: string
  /** The requesting instance's id. */
  readonly from: string
}

export type RecordedSnapshot = { readonly ok: true; readonly announcement?: SnapshotAnnouncement } | { readonly ok: false }

/** The commands the channel sends; an ioredis `Redis` or `Cluster` satisfies it, and so can a stub. */
export interface ClusterChannelRedis {
  set(key: string, value: string): Promise<unknown>
  get(key: string): Promise<string | null>
  publish(channel: string, message: string): Promise<number>
}

/** A connection in subscriber mode (the same shape as shared-flight's), possibly shared with others. */
export interface ClusterChannelSubscriber {
  subscribe(channel: string): Promise<unknown>
  /** ioredis' connection status: no SUBSCRIBE is sent until it is `ready` (absent: always sent). */
  readonly status?: string
  on(event: 'message', listener: (channel: string, message: string) => void): unknown
  /** ioredis' `ready`: the connection is usable (after a reconnect, its channels are being subscribed again). */
  on(event: 'ready', listener: () => void): unknown
}

export type ClusterChannelLogger = Pick<LogSink, 'warn'>

export interface ClusterChannelOptions {
  /** Command connection. */
  readonly redis: ClusterChannelRedis
  /** Subscriber connection; may be shared with other modules. */
  readonly subscriber: ClusterChannelSubscriber
  /** `REDIS_PREFIX`: put before the key and both channels. */
  readonly prefix: string
  readonly commandTimeoutMs: number
  readonly logger: ClusterChannelLogger
  /**
   * Warn once when the channels are still not subscribed this long after creation (default
   * `SUBSCRIBE_WARN_AFTER_MS`): Redis has not been reachable since.
   */
  readonly subscribeWarnAfterMs?: number
}

export interface ClusterChannel {
  /**
   * Records the announcement under `${prefix}snapshot:latest` (JSON) and publishes it on
   * `${prefix}snapshots`. Never throws; false if Redis failed (or the announcement is invalid).
   */
  announceSnapshot(a: SnapshotAnnouncement): Promise<boolean>
  /** The last recorded announcement; undefined when there is none, it is malformed, or Redis failed. */
  latestSnapshot(): Promise<SnapshotAnnouncement | undefined>
  /**
   * The same, telling "Redis failed" (`{ ok: false }`) from "nothing usable is recorded"
   * (`{ ok: true }` without an announcement): a leader re-stores its snapshot only on the latter.
   */
  recordedSnapshot(): Promise<RecordedSnapshot>
  /** Calls `listener` with every valid announcement (this instance's own included); returns the unsubscribe. */
  onSnapshot(listener: (a: SnapshotAnnouncement) => void): () => void
  /**
   * Publishes on `${prefix}refresh`; resolves with the number of subscribers that received it
   * (0: nobody listens; this instance's own subscriber counts), or -1 when Redis failed or the
   * message is invalid. More than `MAX_REFRESH_IDS` ids are sent as `all: true` instead.
   */
  publishRefresh(m: RefreshMessage): Promise<number>
  /**
   * Records an endpoint's new answer generation under `${prefix}endpoint-generation:<name>`, where
   * an instance that starts later reads it. False if Redis failed.
   */
  recordEndpointGeneration(endpoint: string, generation: string): Promise<boolean>
  /** The recorded generation of an endpoint; undefined when none is recorded, null when Redis failed. */
  endpointGeneration(endpoint: string): Promise<string | undefined | null>
  /** Calls `listener` with every valid refresh request (this instance's own included); returns the unsubscribe. */
  onRefresh(listener: (m: RefreshMessage) => void): () => void
  /**
   * Calls `listener` when the subscriber connection is back after a drop: whatever was published
   * on either channel while it was down never reached this instance. Returns the unsubscribe.
   */
  onReconnected(listener: () => void): () => void
  /**
   * Resolves when both channels are subscribed. While Redis is down that waits (subscribing is
   * retried in the background), so bound it where it must not block.
   */
  ready(): Promise<void>
  /** Stops retrying subscriptions and calls no more listeners. The subscriber stays subscribed (it is shared). */
  close(): void
}

/**
 * How long the channels may take to subscribe before that is worth a warning: well past the
 * connect timeout and a few reconnects, so a Redis that starts a little after cms-shield (as in
 * a compose file) goes unmentioned.
 */
export const SUBSCRIBE_WARN_AFTER_MS = 10_000

/** What not being subscribed costs, said by both warnings. */
const SUBSCRIBE_GUIDANCE = 'until they are, this instance hears no snapshot announcements or refresh requests from the others'

/** Most endpoint generations one refresh message may carry: a PURGE names one endpoint. */
const MAX_ENDPOINTS = 16
/** A router name, as API_ENDPOINTS takes it. */
const ENDPOINT_NAME = /^[A-Za-z0-9_-]{1,64}$/

/** Most page ids one refresh message may carry. */
export const MAX_REFRESH_IDS = 10_000
/** Longest message accepted from the channel, before parsing (10,000 ids fit in well under it). */
const MAX_MESSAGE_CHARS = 256 * 1024
const MAX_ID_CHARS = 512
const MAX_REASON_CHARS = 1000
const MAX_FINGERPRINT_CHARS = 1024

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)
const isName = (value: unknown, max: number): value is string => typeof value === 'string' && value.length > 0 && value.length <= max

const isCount = (value: unknown): value is number => typeof value === 'number' && Number.isSafeInteger(value) && value >= 0

/** The announcement in `value`, or a reason it is not one. Unknown fields are ignored (and not copied). */
export function parseSnapshotAnnouncement(value: unknown): SnapshotAnnouncement | { readonly invalid: string } {
  if (!isRecord(value)) return { invalid: 'not an object' }
  const { version, fingerprint, owner, checkedAt, patch } = value
  if (!isCount(version)) return { invalid: 'version is not a safe non-negative integer' }
  if (!isName(fingerprint, MAX_FINGERPRINT_CHARS)) return { invalid: `fingerprint is not a string of 1 to ${MAX_FINGERPRINT_CHARS} characters` }
  if (!isName(owner, MAX_ID_CHARS)) return { invalid: `owner is not a string of 1 to ${MAX_ID_CHARS} characters` }
  if (checkedAt !== undefined && !isCount(checkedAt)) return { invalid: 'checkedAt is not a safe non-negative integer' }
  if (patch !== undefined && (!isRecord(patch) || !isName(patch.from, MAX_FINGERPRINT_CHARS) || !isCount(patch.index))) {
    return { invalid: 'patch is not an object with a fingerprint `from` and a position `index`' }
  }
  return {
    version, fingerprint, owner,
    ...(checkedAt === undefined ? {} : { checkedAt }),
    ...(patch === undefined ? {} : { patch: { from: patch.from as string, index: patch.index as number } }),
  }
}

/** The refresh request in `value`, or a reason it is not one. Unknown fields are ignored (and not copied). */
export function parseRefreshMessage(value: unknown): RefreshMessage | { readonly invalid: string } {
  if (!isRecord(value)) return { invalid: 'not an object' }
  const { ids, all, listing, endpoints, reason, from } = value
  if (typeof reason !== 'string' || reason.length > MAX_REASON_CHARS) return { invalid: `reason is not a string of at most ${MAX_REASON_CHARS} characters` }
  if (!isName(from, MAX_ID_CHARS)) return { invalid: `from is not a string of 1 to ${MAX_ID_CHARS} characters` }
  if (all !== undefined && typeof all !== 'boolean') return { invalid: 'all is not a boolean' }
  if (listing !== undefined && typeof listing !== 'boolean') return { invalid: 'listing is not a boolean' }
  let pageIds: number[] | undefined
  if (ids !== undefined) {
    if (!Array.isArray(ids)) return { invalid: 'ids is not an array' }
    if (ids.length > MAX_REFRESH_IDS) return { invalid: `more than ${MAX_REFRESH_IDS} ids` }
    if (!ids.every((id): id is number => typeof id === 'number' && Number.isSafeInteger(id) && id > 0)) return { invalid: 'ids are not all safe positive integers' }
    pageIds = [...ids]
  }
  let generations: Record<string, string> | undefined
  if (endpoints !== undefined) {
    if (!isRecord(endpoints)) return { invalid: 'endpoints is not an object' }
    const entries = Object.entries(endpoints)
    if (entries.length > MAX_ENDPOINTS) return { invalid: `more than ${MAX_ENDPOINTS} endpoints` }
    if (!entries.every(([name, generation]) => ENDPOINT_NAME.test(name) && isName(generation, MAX_ID_CHARS))) {
      return { invalid: 'endpoints are not all router names with generation names' }
    }
    generations = Object.fromEntries(entries) as Record<string, string>
  }
  return {
    ...(pageIds === undefined ? {} : { ids: pageIds }),
    ...(all === undefined ? {} : { all }),
    ...(listing === undefined ? {} : { listing }),
    ...(generations === undefined ? {} : { endpoints: generations }),
    reason,
    from,
  }
}

const isInvalid = (parsed: object): parsed is { readonly invalid: string } => 'invalid' in parsed

function parseJson(text: string): { ok: true; value: unknown } | { ok: false; reason: string } {
  if (text.length > MAX_MESSAGE_CHARS) return { ok: false, reason: `longer than ${MAX_MESSAGE_CHARS} characters` }
  try {
    return { ok: true, value: JSON.parse(text) as unknown }
  } catch {
    return { ok: false, reason: 'not JSON' }
  }
}

export function createClusterChannel(options: ClusterChannelOptions): ClusterChannel {
  const { redis, subscriber, prefix, commandTimeoutMs, logger } = options
  if (!(commandTimeoutMs > 0)) throw new TypeError(`expected commandTimeoutMs to be a positive number, got ${String(commandTimeoutMs)}`)
  const latestKey = `${prefix}snapshot:latest`
  const snapshotsChannel = `${prefix}snapshots`
  const refreshChannel = `${prefix}refresh`
  const snapshotListeners = new Set<(a: SnapshotAnnouncement) => void>()
  const refreshListeners = new Set<(m: RefreshMessage) => void>()
  const reconnectedListeners = new Set<() => void>()
  let closed = false
  /** One warning for both channels, whatever goes wrong and however often. */
  let warned = false
  const warnOnce = (details: object, message: string) => {
    if (warned || closed) return
    warned = true
    logger.warn({ ...details, channels: [snapshotsChannel, refreshChannel] }, message)
  }
  // Retried until they hold: see subscribe-until-done.ts. Nothing is sent before the connection
  // is ready, so a start that waits for Redis to connect fails no attempt and logs nothing; an
  // attempt that fails was refused or left unanswered by Redis itself.
  const subscriptions = [snapshotsChannel, refreshChannel].map((channel) =>
    subscribeUntilDone(subscriber, channel, {
      commandTimeoutMs,
      onReady: (listener) => void subscriber.on('ready', listener),
      onFailure: (error) => warnOnce(
        { channel, reason: error instanceof Error ? error.message : String(error) },
        `cluster channel: Redis refused or did not answer SUBSCRIBE; retrying in the background (${SUBSCRIBE_GUIDANCE}). Check that the Redis user may SUBSCRIBE to these channels (ACL) and that Redis answers within REDIS_COMMAND_TIMEOUT`,
      ),
    }),
  )
  const subscribed = Promise.all(subscriptions.map((subscription) => subscription.done)).then(() => undefined)
  const warnAfterMs = options.subscribeWarnAfterMs ?? SUBSCRIBE_WARN_AFTER_MS
  // Unref'd: a Redis that never comes up must not keep the process alive.
  const stalled = setTimeout(() => {
    if (subscriptions.every((subscription) => subscription.subscribed)) return
    warnOnce(
      { waitedMs: warnAfterMs, status: subscriber.status },
      `cluster channel: not subscribed ${warnAfterMs >= 1000 ? `${Math.round(warnAfterMs / 1000)} s` : `${warnAfterMs} ms`} after start: Redis cannot be reached; retrying in the background (${SUBSCRIBE_GUIDANCE}). Check REDIS_URL (or REDIS_SENTINELS, REDIS_CLUSTER_NODES), REDIS_PASSWORD and that Redis is up and reachable from here`,
    )
  }, warnAfterMs).unref()
  void subscribed.then(() => clearTimeout(stalled))

  function deliver<T>(listeners: ReadonlySet<(value: T) => void>, value: T, channel: string): void {
    for (const listener of [...listeners]) {
      if (closed) return
      try {
        listener(value)
      } catch (error) {
        logger.warn({ err: error, channel }, 'cluster channel: a listener threw')
      }
    }
  }

  function drop(channel: string, message: string, reason: string): void {
    logger.warn({ channel, reason, length: message.length, excerpt: message.slice(0, 120) }, 'cluster channel: dropped a malformed message')
  }

  // The first `ready` comes before the subscriptions hold; a later one follows a dropped
  // connection, whose channels ioredis subscribes again as it turns ready (`autoResubscribe`).
  // A message published before that SUBSCRIBE lands is lost too, but it names a change made
  // before it, which whatever the listener starts now reads.
  subscriber.on('ready', () => {
    if (closed || !subscriptions.every((subscription) => subscription.subscribed)) return
    deliver(reconnectedListeners, undefined, 'ready')
  })

  subscriber.on('message', (channel, message) => {
    if (closed || (channel !== snapshotsChannel && channel !== refreshChannel)) return
    const json = parseJson(message)
    if (!json.ok) return drop(channel, message, json.reason)
    if (channel === snapshotsChannel) {
      const parsed = parseSnapshotAnnouncement(json.value)
      if (isInvalid(parsed)) return drop(channel, message, parsed.invalid)
      deliver(snapshotListeners, parsed, channel)
    } else {
      const parsed = parseRefreshMessage(json.value)
      if (isInvalid(parsed)) return drop(channel, message, parsed.invalid)
      deliver(refreshListeners, parsed, channel)
    }
  })

  function listen<T>(listeners: Set<(value: T) => void>, listener: (value: T) => void): () => void {
    // Wrapped so the same function added twice is called twice and removed once per unsubscribe.
    const entry = (value: T) => listener(value)
    listeners.add(entry)
    return () => void listeners.delete(entry)
  }

  async function recordedSnapshot(): Promise<RecordedSnapshot> {
    let text: string | null
    try {
      text = await boundedCommand('get', () => redis.get(latestKey), commandTimeoutMs)
    } catch {
      return { ok: false }
    }
    if (text === null) return { ok: true }
    const json = parseJson(text)
    const parsed = json.ok ? parseSnapshotAnnouncement(json.value) : { invalid: json.reason }
    if (isInvalid(parsed)) {
      logger.warn({ key: latestKey, reason: parsed.invalid }, 'cluster channel: the recorded snapshot announcement is malformed')
      return { ok: true }
    }
    return { ok: true, announcement: parsed }
  }

  return {
    async announceSnapshot(a) {
      const parsed = parseSnapshotAnnouncement(a)
      if (isInvalid(parsed)) {
        logger.warn({ reason: parsed.invalid }, 'cluster channel: not announcing an invalid snapshot announcement')
        return false
      }
      const text = JSON.stringify(parsed)
      // Sent together, in this order on the connection, so the wait is one command timeout.
      const results = await Promise.allSettled([
        boundedCommand('set', () => redis.set(latestKey, text), commandTimeoutMs),
        boundedCommand('publish', () => redis.publish(snapshotsChannel, text), commandTimeoutMs),
      ])
      const failed = results.find((result) => result.status === 'rejected')
      if (failed) {
        logger.warn({ err: failed.reason as unknown, version: parsed.version }, 'cluster channel: could not announce the snapshot')
        return false
      }
      return true
    },
    async latestSnapshot() {
      const recorded = await recordedSnapshot()
      return recorded.ok ? recorded.announcement : undefined
    },
    recordedSnapshot,
    onSnapshot: (listener) => listen(snapshotListeners, listener),
    async publishRefresh(m) {
      const capped = Array.isArray(m.ids) && m.ids.length > MAX_REFRESH_IDS ? { reason: m.reason, from: m.from, all: true, ...(m.listing === undefined ? {} : { listing: m.listing }) } : m
      const parsed = parseRefreshMessage(capped)
      if (isInvalid(parsed)) {
        logger.warn({ reason: parsed.invalid }, 'cluster channel: not publishing an invalid refresh message')
        return -1
      }
      try {
        return await boundedCommand('publish', () => redis.publish(refreshChannel, JSON.stringify(parsed)), commandTimeoutMs)
      } catch (error) {
        logger.warn({ err: error, reason: parsed.reason }, 'cluster channel: could not publish the refresh request')
        return -1
      }
    },
    async recordEndpointGeneration(endpoint, generation) {
      try {
        await boundedCommand('set', () => redis.set(`${prefix}endpoint-generation:${endpoint}`, generation), commandTimeoutMs)
        return true
      } catch (error) {
        logger.warn({ err: error, endpoint }, 'cluster channel: could not record the endpoint generation')
        return false
      }
    },
    async endpointGeneration(endpoint) {
      try {
        const recorded = await boundedCommand('get', () => redis.get(`${prefix}endpoint-generation:${endpoint}`), commandTimeoutMs)
        return isName(recorded, MAX_ID_CHARS) ? recorded : undefined
      } catch (error) {
        logger.warn({ err: error, endpoint }, 'cluster channel: could not read the endpoint generation')
        return null
      }
    },
    onRefresh: (listener) => listen(refreshListeners, listener),
    onReconnected: (listener) => listen(reconnectedListeners, listener),
    ready: () => subscribed,
    close() {
      closed = true
      clearTimeout(stalled)
      for (const subscription of subscriptions) subscription.cancel()
      snapshotListeners.clear()
      refreshListeners.clear()
      reconnectedListeners.clear()
    },
  }
}
