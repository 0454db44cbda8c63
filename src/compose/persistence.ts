/**
 * Where snapshots are kept between runs: a file (SNAPSHOT_FILE) and/or Redis, or nowhere.
 * @module
 */
import type { FastifyBaseLogger } from 'fastify'
import type { SharedTier } from '../cache/shared-tier.js'
import type { Config } from '../config/load-config.js'
import { createSnapshotFile } from '../persist/snapshot-file.js'
import { createSnapshotPersistence, type SnapshotPersistence } from '../persist/snapshot-persistence.js'

export function composePersistence(
  config: Config, shared: SharedTier | undefined, logger: FastifyBaseLogger, now: () => number,
): SnapshotPersistence | undefined {
  const targets = [
    ...(config.snapshotFile === undefined ? [] : [createSnapshotFile({ path: config.snapshotFile, logger })]),
    ...(shared ? [shared.snapshotTarget] : []),
  ]
  if (targets.length === 0) return undefined
  return createSnapshotPersistence({
    targets, upstreamUrl: config.upstreamUrl, baseUrl: config.baseUrl, logger, now,
    patchesPerFull: config.snapshotPatchesPerFull, fullIntervalMs: config.snapshotFullIntervalMs,
  })
}
