/**
 * The CMS budget for client-caused requests: one token bucket for the whole cluster, kept in Redis
 * and updated atomically by a Lua script (the arithmetic of `token-bucket.ts`), so N instances
 * spend one budget between them instead of N. Without Redis, or while Redis cannot be reached,
 * each instance spends a bucket of its own with the same limits: a Redis outage may multiply the
 * budget by the number of instances for its duration, but never fails a read (docs/operations.md,
 * "The CMS budget").
 *
 * Time is the caller's clock, sent with each call (instances' clocks are assumed NTP-close); the
 * script never lets a clock that lags behind the last caller's mint tokens.
 * @module
 */
import type { RedisClient } from '../stores/redis-client.js'
import { createLocalBuckets, take, type BucketLimits, type Take } from './token-bucket.js'

/**
 * Numbers are stored with 17 significant digits (Lua's `tostring` keeps 14), so the cluster's
 * bucket computes exactly what `token-bucket.ts` computes.
 *
 * KEYS[1]: the bucket (a hash of `t` tokens and `at` ms). ARGV: rate per second, burst, now (ms),
 * and 1 to take a token or -1 to give one back. Returns {granted 1|0, ms until a token, tokens}.
 * The key expires once the bucket would be full again: a forgotten bucket is a full one.
 */
const TOKEN_BUCKET_LUA = `
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
local state = redis.call('HMGET', KEYS[1], 't', 'at')
local tokens = tonumber(state[1])
local at = tonumber(state[2])
if tokens == nil or at == nil then
  tokens = burst
  at = now
end
if now > at then
  tokens = math.min(burst, tokens + (now - at) * rate / 1000)
  at = now
end
local granted = 0
local wait = 0
if cost < 0 then
  tokens = math.min(burst, tokens + 1)
  granted = 1
elseif tokens >= 1 then
  tokens = tokens - 1
  granted = 1
else
  wait = math.ceil((1 - tokens) * 1000 / rate)
end
local exact = string.format('%.17g', tokens)
redis.call('HSET', KEYS[1], 't', exact, 'at', string.format('%.17g', at))
redis.call('PEXPIRE', KEYS[1], math.ceil((burst - tokens) * 1000 / rate) + 1000)
return {granted, wait, exact}
`

const COMMAND = 'cmsShieldTokenBucket'

type BucketCommand = (key: string, rate: number, burst: number, now: number, cost: number) => Promise<[number, number, string]>

export type BucketScope = 'cluster' | 'local'

export interface SharedTake extends Take {
  /** Where the token came from: the cluster's bucket in Redis, or this instance's own. */
  readonly scope: BucketScope
  /** Tokens left after this call. */
  readonly tokens: number
}

export interface SharedBucket {
  take(): Promise<SharedTake>
  giveBack(scope: BucketScope): Promise<void>
  /** Where tokens are taken from now. */
  readonly scope: BucketScope
  /** Tokens left at the last call (the cluster's, or this instance's own). */
  readonly tokens: number
}

export interface SharedBucketOptions {
  /** Absent: no Redis configured, the bucket is this instance's. */
  readonly redis?: RedisClient
  readonly key: string
  readonly limits: BucketLimits
  readonly now: () => number
  /** Whether Redis is connected now; while it is not, no command is tried. */
  readonly isUp: () => boolean
  /** Called when tokens start or stop coming from this instance's own bucket while Redis is configured. */
  readonly onScopeChange?: (scope: BucketScope, error?: unknown) => void
}

export function createSharedBucket(options: SharedBucketOptions): SharedBucket {
  const local = createLocalBuckets(options.limits, options.now, 1)
  const { redis } = options
  let command: BucketCommand | undefined
  if (redis) {
    redis.defineCommand(COMMAND, { numberOfKeys: 1, lua: TOKEN_BUCKET_LUA })
    command = (redis as unknown as Record<typeof COMMAND, BucketCommand>)[COMMAND].bind(redis)
  }
  let scope: BucketScope = redis ? 'cluster' : 'local'
  let tokens = options.limits.burst
  /**
   * The cluster's last refusal: its tokens and when. Until a whole token has grown back since, the
   * script could only refuse again (other instances' takes only push that later), so the refusal
   * is worked out here with the script's arithmetic instead of costing a round trip to Redis per
   * refused miss (docs/performance.md, "Refusals"). A token given back forgets it.
   */
  let spent: { tokens: number; at: number } | undefined

  /** The script's refusal at `now`, while the cluster's last refusal still holds; else `undefined`. */
  function stillSpent(now: number): SharedTake | undefined {
    if (spent === undefined || now < spent.at) return undefined
    // What the script computes from the state it stored at that refusal (`take` is its arithmetic).
    const result = take(spent, options.limits, now)
    if (result.ok) {
      spent = undefined
      return undefined
    }
    tokens = result.state.tokens
    return { ...result, scope: 'cluster', tokens }
  }

  const become = (next: BucketScope, error?: unknown) => {
    if (next === scope) return
    scope = next
    options.onScopeChange?.(next, error)
  }

  function takeLocal(): SharedTake {
    const result = local.take('')
    tokens = result.state.tokens
    return { ...result, scope: 'local', tokens }
  }

  return {
    async take() {
      if (!command || !options.isUp()) {
        if (command) become('local')
        return takeLocal()
      }
      const now = options.now()
      const refused = scope === 'cluster' ? stillSpent(now) : undefined
      if (refused) return refused
      try {
        const { ratePerSecond, burst } = options.limits
        const [granted, wait, left] = await command(options.key, ratePerSecond, burst, now, 1)
        become('cluster')
        tokens = Number(left)
        spent = granted === 1 ? undefined : { tokens, at: now }
        return { ok: granted === 1, retryAfterMs: Number(wait), state: { tokens, at: options.now() }, scope: 'cluster', tokens }
      } catch (error) {
        // ioredis's commandTimeout and its offline refusal both land here: never wait for Redis.
        become('local', error)
        return takeLocal()
      }
    },
    async giveBack(from) {
      spent = undefined
      if (from === 'local' || !command) {
        local.giveBack('')
        return
      }
      try {
        const { ratePerSecond, burst } = options.limits
        await command(options.key, ratePerSecond, burst, options.now(), -1)
      } catch {
        // A token not given back costs one request of budget at most.
      }
    },
    get scope() {
      return scope
    },
    get tokens() {
      return tokens
    },
  }
}
