/**
 * What the cluster's parts need of Redis and of the log: an ioredis `Redis` or `Cluster`
 * satisfies them, and so can a stub.
 * @module
 */
import type { LogSink } from '../observability/log-sink.js'

/** Runs a Lua script atomically (the lease's renewal, the served record's writes and reads). */
export interface ScriptRedis {
  eval(script: string, numberOfKeys: number, ...keysAndArgs: (string | number)[]): Promise<unknown>
}

export type ClusterLogger = Pick<LogSink, 'info' | 'warn'>
