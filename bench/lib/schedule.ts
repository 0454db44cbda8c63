/**
 * The order the scenarios run in, which of them keeps its time when not all fit before the
 * deadline (BENCH_MAX_SECONDS), and a rough budget for each, so that one running late leaves time
 * for the more important ones after it. See bench/README.md, "Scenarios".
 * @module
 */
import { ORIGIN_PAGE_SIZE, SYNC_CONCURRENCY } from './config.js'
import type { BenchConfig, ScenarioId } from './config.js'
import { wrkEstimateMs } from './wrk.js'

/** The order the scenarios run in: the ones with targets first, the informational list rows last. */
export const PLAN: readonly ScenarioId[] = ['detail', 'seed', '304', 'wrk', 'headers', 'logging', 'cold', 'sync', 'large', 'sync-cpu', 'readthrough', 'list', 'frontend', 'flood', 'purge', 'sync-cost', 'edits']
/**
 * Which scenario keeps its time when not all fit before the deadline, most important first: the
 * required rows, then the cheap rows with targets, then 304 (long, with a target), then the rest.
 */
export const PRIORITY: readonly ScenarioId[] = ['detail', 'seed', 'wrk', 'cold', 'sync', 'large', '304', 'logging', 'readthrough', 'list', 'frontend', 'headers', 'flood', 'edits', 'purge', 'sync-cpu', 'sync-cost']

/** The first full sync's ideal: `(N / SYNC_CONCURRENCY + ceil(N / 250)) × latency`, in seconds. */
export function idealSyncS(config: Pick<BenchConfig, 'syncPages' | 'syncLatencyMs'>): number {
  const listingPages = Math.ceil(config.syncPages / ORIGIN_PAGE_SIZE)
  return ((config.syncPages / SYNC_CONCURRENCY + listingPages) * config.syncLatencyMs) / 1000
}

export class Schedule {
  /** `floodMs`: the flood scenario's own estimate (scenarios/flood.ts). */
  constructor(
    private readonly config: BenchConfig,
    private readonly deadline: number,
    private readonly floodMs: number,
  ) {}

  readonly remainingMs = (): number => this.deadline - Date.now()

  readonly selected = (id: ScenarioId): boolean => this.config.only.has(id)

  /** `targets`: cms-shield and the baselines (4 in the detail row with the four-header baseline). */
  readonly estimateThroughputMs = (targets = 3): number => {
    const config = this.config
    return (targets * config.warmupS + config.rounds * 2 * targets * (config.durationS + 0.3)) * 1000 + 3_000
  }

  /** A rough budget per scenario, so that one running late leaves time for the ones after it. */
  readonly estimateMs = (id: ScenarioId): number => {
    const config = this.config
    switch (id) {
      case 'logging':
        return (Math.max(3, config.warmupS) + config.warmupS + 4 * (config.durationS + 0.3)) * 1000 + 10_000
      case 'cold':
        return config.rounds * (2 * config.coldDelayMs + 400) + 10_000
      case 'sync':
        return 1.5 * idealSyncS(config) * 1000 + 25_000
      case 'flood':
        return this.floodMs
      case 'edits':
        // The syncing instance's first sync, two followers' loads, the idle window, the edits, a late start.
        return 90_000 * (config.largePages / 100_000) + 20_000 + config.edits * 1_000
      case 'purge':
        // Twice a cluster (the seed site, then the large one: its sync and two loads), each with its edits.
        return 90_000 * (config.largePages / 100_000) + 2 * (20_000 + (config.purgeEdits + 3) * 500)
      case 'wrk':
        // Five targets a row: detail and seed, cms-shield and four baselines; 304, cms-shield's 304
        // and 200, and bare Fastify's 304, bare node's 304 and 200.
        return wrkEstimateMs(config, config.wrkRows.map(() => 5))
      case 'headers':
        // Six cms-shields, each started (about 5 s) and warmed up for 3 s.
        return wrkEstimateMs(config, [6], 6 * 8_000)
      case 'frontend':
        // Two sites (plain, then two languages), each a fake CMS and a cms-shield started and synced,
        // a build, and rounds of the mix against the plain listing: mix, listing, listing, mix.
        return 2 * (25_000 + (config.rounds * 4 * (config.durationS + 0.3) + 2 * Math.max(1, config.warmupS)) * 1000)
      case 'sync-cost':
        // At 10,000 and 100,000 pages: two cms-shields each, their first syncs, a paced walk and the verification's window.
        return 400_000
      case 'sync-cpu':
        // Per count: a site made, a fresh cms-shield's full sync and its walks.
        return config.syncCpuPages.reduce((sum, pages) => sum + 20_000 + pages * 0.6, 0)
      case 'large':
        // Twice (autocannon, then wrk): a warm-up, two steady runs and two swap runs.
        return 140_000 * (config.largePages / 100_000) + 30_000 + 2 * (4 * (config.durationS + 0.3) + Math.max(2, config.warmupS)) * 1000
      default:
        return this.estimateThroughputMs()
    }
  }

  /** Time left for `id` once the more important scenarios that run after it have their budgets. */
  readonly spareMs = (id: ScenarioId): number => {
    const rank = PRIORITY.indexOf(id)
    const later = PLAN.slice(PLAN.indexOf(id) + 1).filter((each) => this.selected(each) && PRIORITY.indexOf(each) < rank)
    return this.remainingMs() - later.reduce((sum, each) => sum + this.estimateMs(each), 0)
  }
}
