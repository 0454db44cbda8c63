/**
 * Documentation rendered from the schema: the full configuration table of docs/configuration.md and
 * `config/example.env`. Pure, so tests can compare both files with what the schema says today.
 * @module
 */

import { describeLimits } from './parse-value.js'
import { variables } from './schema.js'

/** The file, relative to the repository root, whose marked region holds the full configuration table. */
export const CONFIG_DOC = 'docs/configuration.md'

/** Marks the generated region of CONFIG_DOC that `scripts/config-table.ts --write` replaces. */
export const TABLE_START = '<!-- config-table:start -->'
export const TABLE_END = '<!-- config-table:end -->'

const cell = (text: string): string => text.replaceAll('|', '\\|').replaceAll('\n', ' ')

/** The full markdown table: Variable, Default, Meaning (limits appended to the meaning). */
export function renderConfigTable(): string {
  const rows = variables().map(([, variable]) => {
    const fallback = variable.required === true ? '**required**' : variable.optional === true ? 'unset' : `\`${variable.default}\``
    const limits = describeLimits(variable)
    const meaning = limits === undefined ? variable.doc : `${variable.doc} Allowed: ${limits}.`
    return `| \`${variable.name}\` | ${cell(fallback)} | ${cell(meaning)} |`
  })
  return ['| Variable | Default | Meaning |', '|---|---|---|', ...rows].join('\n') + '\n'
}

/** Every variable, commented with its meaning and default; required ones with an example value. */
export function renderExampleEnv(): string {
  const blocks = variables().map(([, variable]) => {
    const limits = describeLimits(variable)
    const lines = [`# ${variable.doc.replaceAll('`', '')}`]
    if (limits !== undefined) lines.push(`# Allowed: ${limits}.`)
    if (variable.required === true) {
      lines.push('# Required.', `${variable.name}=${variable.example}`)
    } else if (variable.optional === true) {
      lines.push('# Optional (unset by default).', `# ${variable.name}=${variable.example}`)
    } else {
      lines.push(`# Default: ${variable.default}`, `# ${variable.name}=${variable.default}`)
    }
    return lines.join('\n')
  })
  const header = [
    '# cms-shield configuration: every variable it reads, with its meaning and default.',
    '# Durations: 250ms, 30s, 5m, 1h30m (a bare number means seconds). Sizes: 512kb, 64mb, 1gb',
    '# (binary units; a bare number means bytes). An empty value means "use the default".',
    '# Generated from src/config/schema.ts by `npx tsx scripts/config-table.ts --example --write`.',
  ].join('\n')
  return `${header}\n\n${blocks.join('\n\n')}\n`
}

/**
 * Replaces the text between the markers in `doc` with `table`, or returns `undefined` when
 * the markers are missing (or out of order) so the caller can say so instead of guessing a place.
 */
export function replaceTable(doc: string, table: string): string | undefined {
  const start = doc.indexOf(TABLE_START)
  const end = doc.indexOf(TABLE_END)
  if (start === -1 || end === -1 || end < start) return undefined
  return `${doc.slice(0, start + TABLE_START.length)}\n${table}${doc.slice(end)}`
}
