/**
 * What a result was measured on: the commit (and whether src/ had changes on top of it) and the
 * machine. Shared by the benchmark (`bench/run.ts`) and the soak (`scripts/soak.ts`).
 * @module
 */
import { execFileSync } from 'node:child_process'
import { cpus, loadavg, totalmem } from 'node:os'
import { round } from './stats.js'

export interface GitInfo {
  readonly commit: string
  readonly srcDiffersFromCommit: boolean
}

/** The commit measured, and whether src/ differs from it (read-only git commands; undefined outside a checkout). */
export function gitInfo(): GitInfo | undefined {
  try {
    const commit = execFileSync('git', ['rev-parse', 'HEAD'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim()
    let srcDiffersFromCommit = false
    try {
      execFileSync('git', ['diff', '--quiet', 'HEAD', '--', 'src'], { stdio: 'ignore' })
    } catch {
      srcDiffersFromCommit = true
    }
    return { commit, srcDiffersFromCommit }
  } catch {
    return undefined
  }
}

export interface MachineInfo {
  readonly git: GitInfo | null
  readonly cpus: number
  readonly cpuModel: string
  readonly node: string
  readonly platform: string
  readonly totalMemoryBytes: number
  readonly loadAverageAtStart: number[]
  readonly date: string
}

/** The machine and commit, read at `startedAt` (ms since epoch). */
export function machineInfo(startedAt: number): MachineInfo {
  const cpuList = cpus()
  return {
    git: gitInfo() ?? null,
    cpus: cpuList.length,
    cpuModel: cpuList[0]?.model ?? 'unknown',
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
    totalMemoryBytes: totalmem(),
    loadAverageAtStart: loadavg().map((value) => round(value, 2)),
    date: new Date(startedAt).toISOString(),
  }
}
