/**
 * The end of a run: the markdown report on stdout (how the run was set up, the rows, the harness
 * table, the warnings) and the same numbers, with every single run, as JSON in `BENCH_OUT`.
 * @module
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { NODE_FOUR_HEADERS } from './baselines.js'
import type { BenchConfig } from './config.js'
import type { MachineInfo } from './machine.js'
import type { CpuPinning } from './processes.js'
import type { Recorder } from './recorder.js'
import { fmtInt, markdownTable, renderRows } from './report.js'
import { round } from './stats.js'

export interface RunSetup {
  config: BenchConfig
  machine: MachineInfo
  pinning: CpuPinning | undefined
  recorder: Recorder
}

/** Prints the report and writes the JSON; a failure to write is reported on stderr, not thrown. */
export function writeReport({ config, machine, pinning, recorder }: RunSetup, status: 'complete' | 'incomplete', reason?: string): void {
  const { rows, checks, skipped, warnings, results, startedAt } = recorder
  const lines: string[] = []
  lines.push('')
  lines.push(`## cms-shield benchmark (${status}${reason ? `: ${reason}` : ''})`)
  lines.push('')
  lines.push(
    `${String(machine.cpus)} × ${String(machine.cpuModel)}, node ${process.version}, ${String(machine.date)}; ` +
      `${config.durationS}s runs, ${config.rounds} round(s) of A B C C B A, ${config.connections} connections, pipelining 1; ` +
      `site of ${fmtInt(config.pages)} pages for the throughput rows.`,
  )
  lines.push(
    pinning
      ? `Pinned (BENCH_PIN=auto): the harness and the fake CMS on CPU ${pinning.harness}, each measured server on CPU ${pinning.server}.`
      : 'Not pinned (BENCH_PIN=off, or no taskset or a single CPU): the scheduler places every process.',
  )
  lines.push(
    config.baselineHeaders === 'minimal'
      ? 'The baselines send the body with content-type, etag, cache-control and vary (BENCH_BASELINE_HEADERS=minimal): cms-shield\'s other headers count against it.'
      : 'The baselines send the same bytes as cms-shield: the body with every header it sent, its request id as a fixed value of the same length (BENCH_BASELINE_HEADERS=same, the default). ' +
        `The detail row also runs bare node with only content-type, etag, cache-control and vary ("${NODE_FOUR_HEADERS}"), which prices that header set.`,
  )
  const git = machine.git as { commit: string; srcDiffersFromCommit: boolean } | null
  lines.push(
    'cms-shield runs with LOG_LEVEL=warn, so its per-request log line is off in every row but the LOG_LEVEL=info one; ' +
      'CACHE_TTL=24h, so read-through hits stay hits for the whole run' +
      `${Object.keys(config.shieldEnv).length > 0 ? `; extra cms-shield variables: ${Object.entries(config.shieldEnv).map(([k, v]) => `${k}=${v}`).join(' ')}` : ''}.` +
      `${git ? ` Commit ${git.commit.slice(0, 12)}${git.srcDiffersFromCommit ? ' with uncommitted changes in src/' : ''}.` : ''}`,
  )
  lines.push('')
  lines.push(renderRows(rows))
  const harness = results.harness as string[][] | undefined
  if (harness && harness.length > 0) {
    lines.push('')
    lines.push('Who set the pace (means over the runs): server CPU in cores and µs of server CPU per request; harness = this process (autocannon).')
    lines.push('')
    lines.push(markdownTable(['scenario', 'target', 'req/s', 'server cores', 'server µs/req', 'CPU-cost ratio vs shield', 'harness ELU', 'harness cores', 'foreign cores', 'bound by'], harness))
  }
  if (warnings.length > 0) {
    lines.push('')
    lines.push('Warnings:')
    for (const warning of warnings) lines.push(`- ${warning}`)
  }
  process.stdout.write(`${lines.join('\n')}\n`)
  const json = {
    status,
    reason: reason ?? null,
    machine,
    config: { ...config, only: [...config.only] },
    pinning: pinning ?? null,
    elapsedSeconds: round((Date.now() - startedAt) / 1000, 1),
    rows,
    checks,
    skipped,
    warnings,
    results,
  }
  try {
    mkdirSync(join(config.out, '..'), { recursive: true })
    writeFileSync(config.out, `${JSON.stringify(json, null, 2)}\n`)
    process.stdout.write(`\nwrote ${config.out}\n`)
  } catch (error) {
    process.stderr.write(`bench: could not write ${config.out}: ${error instanceof Error ? error.message : String(error)}\n`)
  }
}
