/**
 * The report: one markdown table of every scenario against its target, a second one that says
 * whether each throughput number is the server's or the harness's, and the JSON written next to it.
 * @module
 */

export interface Row {
  scenario: string
  shield: string
  fastify: string
  node: string
  vsFastify: string
  vsNode: string
  target: string
  met: string
}

export interface Check {
  /** What is checked, for the JSON. */
  name: string
  value: number
  op: '>=' | '<=' | '=='
  target: number
  met: boolean
  /** How far the value is on the wrong side of the target, in percent of the target. */
  missedByPct: number | null
  required: boolean
}

export function check(name: string, value: number, op: Check['op'], target: number, required = false): Check {
  const met = !Number.isFinite(value)
    ? false
    : op === '>=' ? value >= target : op === '<=' ? value <= target : value === target
  let missedByPct: number | null = null
  if (!met && Number.isFinite(value) && target !== 0) missedByPct = (Math.abs(value - target) / Math.abs(target)) * 100
  return { name, value, op, target, met, missedByPct, required }
}

/** `yes`, or `missed by 12.3%` (`no` when the value is missing). */
export function verdict(result: Check): string {
  if (result.met) return 'yes'
  if (result.missedByPct === null) return 'no'
  return `missed by ${result.missedByPct < 10 ? result.missedByPct.toFixed(1) : result.missedByPct.toFixed(0)}%`
}

export function fmtInt(value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return '—'
  return Math.round(value).toLocaleString('en-US')
}

export function fmtMs(value: number | null | undefined, digits = 2): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return '—'
  return `${value.toFixed(digits)} ms`
}

export function fmtRatio(value: number | null | undefined, digits = 2): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return '—'
  return `${value.toFixed(digits)}x`
}

export function fmtBytes(value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return '—'
  if (value >= 1024 ** 3) return `${(value / 1024 ** 3).toFixed(2)} GiB`
  if (value >= 1024 ** 2) return `${(value / 1024 ** 2).toFixed(1)} MiB`
  if (value >= 1024) return `${(value / 1024).toFixed(1)} KiB`
  return `${value} B`
}

function escapeCell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\n/g, ' ')
}

export function markdownTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const lines = [
    `| ${header.map(escapeCell).join(' | ')} |`,
    `|${header.map(() => '---').join('|')}|`,
    ...rows.map((row) => `| ${row.map(escapeCell).join(' | ')} |`),
  ]
  return lines.join('\n')
}

export function renderRows(rows: readonly Row[]): string {
  return markdownTable(
    ['scenario', 'cms-shield', 'fastify baseline', 'node baseline', 'ratio vs fastify', 'ratio vs node', 'target', 'met?'],
    rows.map((row) => [row.scenario, row.shield, row.fastify, row.node, row.vsFastify, row.vsNode, row.target, row.met]),
  )
}
