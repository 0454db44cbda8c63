/**
 * Liveness and readiness. `/readyz` turns 200 once a snapshot is loaded and stays 200 while the
 * CMS is down (the snapshot keeps serving); its body says how fresh the snapshot is.
 * @module
 */
import type { FastifyInstance } from 'fastify'
import { errorCatalogue } from '../../errors.js'
import type { NetStatus, SyncService } from '../../sync/sync-service.js'

export interface RedisHealth {
  up(): boolean
  /** Commands that failed or timed out since start (each answered from this process instead). */
  errors(): number
}

export interface HealthOptions {
  readonly sync: SyncService
  /** The other Sites' trees (SITES): ready only once each is loaded too. */
  readonly others?: ReadonlyArray<{ readonly site: string; readonly sync: SyncService }>
  readonly now: () => number
  readonly redis?: RedisHealth
  /** With Redis: 'leader' (syncs), 'follower' (loads the leader's snapshots) or 'standalone'. */
  readonly role?: () => string
  /** On a follower: when the syncing instance's last good sync confirmed the tree served (ms since the epoch). */
  readonly confirmedAt?: () => number | undefined
  /** The read-through budget's state: where it is kept and how much of it is in use. */
  readonly budget?: () => { readonly scope: string; readonly tokens: number; readonly concurrencyLimit: number; readonly inFlight: number; readonly queued: number }
}

function describeCode(code: string): string {
  return Object.hasOwn(errorCatalogue, code) ? errorCatalogue[code as keyof typeof errorCatalogue].doc : 'the sync failed'
}

/** Each other Site's tree: loaded or not, its size, and whether the CMS answered its last sync. */
function sitesOf(others: ReadonlyArray<{ readonly site: string; readonly sync: SyncService }>): Record<string, unknown> {
  return Object.fromEntries(others.map(({ site, sync }) => [site, {
    ready: sync.current !== undefined,
    pages: sync.current?.pages.length ?? 0,
    cms: sync.status.consecutiveFailures > 0 ? 'failing' : sync.status.lastSuccessAt !== undefined ? 'ok' : 'unknown',
  }]))
}

/**
 * The safety net's progress under SYNC_BUDGET (docs/operations.md, "The sync's safety net"):
 * `null` without a budget, and on an instance that does not sync.
 */
function netOf(net: NetStatus | undefined, now: number): Record<string, unknown> | null {
  if (net === undefined) return null
  const iso = (at: number | undefined) => (at === undefined ? null : new Date(at).toISOString())
  const elapsed = now - net.since
  return {
    budget: net.budget,
    lastWalkEndedAt: iso(net.lastWalkEndedAt),
    // The walk after it waits for what it cost to pay off (docs/operations.md).
    nextWalkAt: iso(net.nextWalkAt),
    oldestVerifiedAt: iso(net.oldestVerifiedAt),
    verificationAgeSeconds: net.oldestVerifiedAt === undefined ? null : Math.max(0, Math.round((now - net.oldestVerifiedAt) / 1000)),
    // CMS time the walk and the verification used, as a share of one worker since the net started.
    budgetUsed: elapsed > 0 ? Number(((net.walkCmsMs + net.verifyCmsMs) / elapsed).toFixed(4)) : 0,
  }
}

export function registerHealthRoutes(app: FastifyInstance, { sync, others = [], now, redis, role, confirmedAt, budget }: HealthOptions): void {
  app.get('/healthz', async (_request, reply) => reply.header('cache-control', 'no-store').send({ status: 'ok' }))

  app.get('/readyz', async (_request, reply) => {
    const snapshot = sync.current
    const status = sync.status
    const confirmed = confirmedAt?.()
    const ready = snapshot !== undefined && others.every((other) => other.sync.current !== undefined)
    const body = {
      ready,
      snapshot: snapshot
        ? {
            version: snapshot.version,
            pages: snapshot.pages.length,
            syncedAt: new Date(snapshot.syncedAt).toISOString(),
            // Since the CMS last confirmed this tree: this instance's own last good sync, or on a
            // follower the syncing instance's, which announces each sync that changed nothing.
            ageSeconds: Math.max(0, Math.round((now() - Math.max(status.lastSuccessAt ?? 0, confirmed ?? 0, snapshot.syncedAt)) / 1000)),
          }
        : null,
      // Did the CMS answer this instance's last sync? `unknown` before any, and on an instance
      // that follows another's syncs (see `sync.role`).
      cms: status.consecutiveFailures > 0 ? 'failing' : status.lastSuccessAt !== undefined ? 'ok' : 'unknown',
      sync: {
        // Without Redis every instance syncs for itself.
        role: role?.() ?? 'single',
        lastMode: status.lastMode ?? null,
        running: status.running,
        lastSuccessAt: status.lastSuccessAt === undefined ? null : new Date(status.lastSuccessAt).toISOString(),
        // A follower's own syncs are none; this is the syncing instance's last one it announced.
        leaderLastSuccessAt: confirmed === undefined ? null : new Date(confirmed).toISOString(),
        // The code and what it means; the message (which may name the CMS's address) is logged only.
        lastError: status.lastErrorCode === undefined ? null : `${status.lastErrorCode}: ${describeCode(status.lastErrorCode)}`,
        consecutiveFailures: status.consecutiveFailures,
        net: netOf(sync.net, now()),
      },
      // A down Redis degrades to this process's own tier: visible here, but still ready.
      redis: redis === undefined ? 'off' : redis.up() ? 'up' : 'down',
      redisErrors: redis?.errors() ?? 0,
      // Client-caused CMS requests: `cluster` budget in Redis, or `local` (no Redis, or Redis down).
      readThrough: budget === undefined ? null : budget(),
      ...(others.length === 0 ? {} : { sites: sitesOf(others) }),
    }
    return reply.code(ready ? 200 : 503).header('cache-control', 'no-store').send(body)
  })
}
