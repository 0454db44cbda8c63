/**
 * What a benchmark run collects as it goes: the table's rows, the checks against the targets, the
 * raw results for the JSON, the skipped scenarios, the warnings and the harness table; and the
 * console log, each line stamped with the seconds since the run started.
 * @module
 */
import type { Check, Row } from './report.js'

export class Recorder {
  readonly rows: Row[] = []
  readonly checks: Check[] = []
  readonly results: Record<string, unknown> = {}
  readonly skipped: Array<{ scenario: string; reason: string }> = []
  readonly warnings: string[] = []
  /** The "who set the pace" table; `results.harness` once a throughput scenario has run. */
  readonly harness: string[][] = []

  constructor(readonly startedAt: number) {}

  private elapsedS(): string {
    return ((Date.now() - this.startedAt) / 1000).toFixed(0).padStart(4)
  }

  readonly log = (message: string): void => {
    process.stdout.write(`[${this.elapsedS()}s] ${message}\n`)
  }

  readonly warn = (message: string): void => {
    this.warnings.push(message)
    process.stdout.write(`[${this.elapsedS()}s] WARNING: ${message}\n`)
  }

  readonly addCheck = (result: Check): Check => {
    this.checks.push(result)
    return result
  }

  readonly skip = (scenario: string, reason: string): void => {
    this.skipped.push({ scenario, reason })
    this.warn(`${scenario}: skipped (${reason})`)
    this.rows.push({ scenario, shield: `skipped: ${reason}`, fastify: '—', node: '—', vsFastify: '—', vsNode: '—', target: '—', met: '—' })
  }
}
