/**
 * Measuring on a shared machine: before a round, wait (bounded) for processes outside the
 * benchmark to quieten; after a run during which they took CPU, measure it once more.
 * @module
 */
import type { ScenarioId } from './config.js'
import { FOREIGN_LOAD_CORES, runLoad, waitForQuiet } from './load.js'
import type { LoadSample, LoadSpec, LoadTarget } from './load.js'
import type { Schedule } from './schedule.js'

/** Load from outside the benchmark past which a run is measured again (once), after waiting for quiet. */
const FOREIGN_REDO_CORES = 0.25

export class Pacing {
  /** `quietWaitS`: BENCH_QUIET_WAIT. */
  constructor(
    private readonly quietWaitS: number,
    private readonly schedule: Schedule,
    private readonly log: (message: string) => void,
  ) {}

  /** Waits (bounded by BENCH_QUIET_WAIT and the time `id` has) until the machine is quiet; says so when it was not. */
  readonly quiet = async (id: ScenarioId, label: string): Promise<void> => {
    const { spareMs, estimateMs } = this.schedule
    const maxMs = Math.min(this.quietWaitS * 1000, Math.max(0, spareMs(id) - estimateMs(id)))
    if (maxMs <= 0) return
    const started = Date.now()
    const foreign = await waitForQuiet(maxMs)
    const waited = Date.now() - started
    if (foreign !== null && foreign >= FOREIGN_LOAD_CORES) this.log(`  ${label}: ${foreign.toFixed(2)} cores still busy outside the benchmark after waiting ${(waited / 1000).toFixed(0)} s; going on`)
    else if (waited > 1_500) this.log(`  ${label}: waited ${(waited / 1000).toFixed(0)} s for other processes to quieten`)
  }

  /** One run; measured again (once) when something outside the benchmark took CPU during it. */
  readonly measure = async (id: ScenarioId, target: LoadTarget, spec: LoadSpec): Promise<LoadSample & { redone: boolean }> => {
    const { spareMs, estimateMs } = this.schedule
    const first = await runLoad(target, spec)
    if (first.foreignCores === null || first.foreignCores <= FOREIGN_REDO_CORES || this.quietWaitS === 0) return { ...first, redone: false }
    if (spareMs(id) - estimateMs(id) < (spec.durationS + this.quietWaitS) * 1000) return { ...first, redone: false }
    this.log(`  ${id} / ${target.name}: ${first.foreignCores.toFixed(2)} cores busy outside the benchmark; measuring again`)
    await this.quiet(id, `${id} / ${target.name}`)
    const second = await runLoad(target, spec)
    return (second.foreignCores ?? 0) < first.foreignCores ? { ...second, redone: true } : { ...first, redone: true }
  }
}
