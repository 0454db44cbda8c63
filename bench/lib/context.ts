/**
 * What every scenario gets from the runner (bench/run.ts): the configuration, the fake CMS, the
 * work directory, the recorder for its rows and results, the schedule and pacing of its runs,
 * and how to start a cms-shield or a baseline. (The flood scenario has its own, narrower
 * `FloodContext`, which the runner builds from this one.)
 * @module
 */
import type { Baseline, BaselineOptions } from './baselines.js'
import type { BenchConfig } from './config.js'
import type { Origin } from './origin-control.js'
import type { Pacing } from './pacing.js'
import type { Recorder } from './recorder.js'
import type { Schedule } from './schedule.js'
import type { Shield } from './shield.js'

export interface BenchContext {
  config: BenchConfig
  origin: Origin
  /** Temporary; cms-shield's logs and the baselines' body and header files go here. */
  workDir: string
  recorder: Recorder
  schedule: Schedule
  pacing: Pacing
  /**
   * A cms-shield against `origin` (or `at`, a fake CMS of the scenario's own); `env`: variables of
   * this scenario's own (BENCH_SHIELD_ENV still wins).
   */
  startShield(label: string, logLevel: 'warn' | 'info', readyTimeoutMs: number, env?: Record<string, string>, at?: Origin): Promise<Shield>
  startBaseline(kind: 'fastify' | 'node', bodyFile: string, headersFile: string, options?: BaselineOptions): Promise<Baseline>
}
