/**
 * Liveness and readiness. `/readyz` turns 200 once a snapshot is loaded and stays 200 while the
 * CMS is down (the snapshot keeps serving); its body says how fresh the snapshot is.
 * @module
 */
import type { FastifyInstance } from 'fastify'
import { errorCatalogue } from '../../errors.js'
import type { SyncService } from '../../sync/sync-service.js'

export interface RedisHealth {
  up(): boolean
  /** Commands that failed or timed out since start (each answered from this process instead). */
  errors(): number
}

export interface HealthOptions {
  readonly sync: SyncService
  readonly now: () => number
  readonly redis?: RedisHealth
  /** With Redis: 'leader' (syncs), 'follower' (loads the leader's snapshots) or 'standalone'. */
  readonly role?: () => string
}

function describeCode(code: string): string {
  return Object.hasOwn(errorCatalogue, code) ? errorCatalogue[code as keyof typeof errorCatalogue].doc : 'the sync failed'
}

export function registerHealthRoutes(app: FastifyInstance, { sync, now, redis, role }: HealthOptions): void {
  app.get('/healthz', async (_request, reply) => reply.header('cache-control', 'no-store').send({ status: 'ok' }))

  app.get('/readyz', async (_request, reply) => {
    const snapshot = sync.current
    const status = sync.status
    const body = {
      ready: snapshot !== undefined,
      snapshot: snapshot
        ? {
            version: snapshot.version,
            pages: snapshot.pages.length,
            syncedAt: new Date(snapshot.syncedAt).toISOString(),
            ageSeconds: Math.max(0, Math.round((now() - (status.lastSuccessAt ?? snapshot.syncedAt)) / 1000)),
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
        // The code and what it means; the message (which may name the CMS's address) is logged only.
        lastError: status.lastErrorCode === undefined ? null : `${status.lastErrorCode}: ${describeCode(status.lastErrorCode)}`,
        consecutiveFailures: status.consecutiveFailures,
      },
      // A down Redis degrades to this process's own tier: visible here, but still ready.
      redis: redis === undefined ? 'off' : redis.up() ? 'up' : 'down',
      redisErrors: redis?.errors() ?? 0,
    }
    return reply.code(snapshot ? 200 : 503).header('cache-control', 'no-store').send(body)
  })
}
