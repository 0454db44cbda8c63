/**
 * Three cms-shields sharing a private Redis behind one public name, as a load balancer would put
 * them: the first to start syncs, the other two follow. Used by the `edits` and `purge` rows.
 * @module
 */
import type { BenchContext } from './context.js'
import { startBenchRedis } from './redis-server.js'
import type { BenchRedis } from './redis-server.js'
import type { Shield } from './shield.js'
import { shieldIdle } from './shield.js'

/** One public name for the whole cluster, as behind a load balancer. */
export const CLUSTER_BASE_URL = 'http://shield.bench.example'

export interface BenchCluster {
  redis: BenchRedis
  leader: Shield
  followers: [Shield, Shield]
  /** Every instance started, the leader first; a scenario may push more (stopped with the rest). */
  shields: Shield[]
  /** The environment every instance got, for one started later. */
  env: Record<string, string>
  stop(): Promise<void>
}

/**
 * `label`: the log-file prefix; `leaderLogLevel`: the syncing instance's (its log is parsed by
 * some rows); `extraEnv`: on top of the cluster's own. Waits until the syncing instance is idle.
 */
export async function startCluster(
  ctx: BenchContext,
  label: string,
  extraEnv: Record<string, string>,
  leaderLogLevel: 'warn' | 'info' = 'warn',
): Promise<BenchCluster> {
  const redis = await startBenchRedis(undefined)
  // A long lease and command timeout: on a machine shared with the load generator, a lease tick
  // answered late must not hand the sync to another instance mid-run (its first act would be a
  // full sync and a whole snapshot, which is not what these rows measure).
  const env = {
    REDIS_URL: redis.url, REDIS_PREFIX: `bench-${label}:`, BASE_URL: CLUSTER_BASE_URL, REFRESH_DEBOUNCE: '0ms', LEADER_LEASE: '120s', REDIS_COMMAND_TIMEOUT: '2s',
    ...extraEnv,
  }
  const shields: Shield[] = []
  const stop = async (): Promise<void> => {
    for (const shield of [...shields].reverse()) await shield.child.stop()
    await redis.stop()
  }
  try {
    const leader = await ctx.startShield(`cms-shield-${label}-leader`, leaderLogLevel, 180_000, env)
    shields.push(leader)
    const followers: Shield[] = []
    for (const name of ['a', 'b']) {
      const follower = await ctx.startShield(`cms-shield-${label}-follower-${name}`, 'warn', 60_000, env)
      shields.push(follower)
      followers.push(follower)
    }
    await shieldIdle(leader, 60_000)
    return { redis, leader, followers: followers as [Shield, Shield], shields, env, stop }
  } catch (error) {
    await stop()
    throw error
  }
}
