/**
 * Renders configuration docs from `src/config/schema.ts`.
 *
 *   tsx scripts/config-table.ts                    print the full configuration table
 *   tsx scripts/config-table.ts --write            replace it in docs/configuration.md between the markers
 *   tsx scripts/config-table.ts --example          print config/example.env
 *   tsx scripts/config-table.ts --example --write  rewrite config/example.env
 *
 * Without docs/configuration.md or its markers, `--write` prints the table and says where the markers go.
 * (The README keeps a short hand-written table of the settings that matter and links there.)
 * @module
 */

import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { CONFIG_DOC, renderConfigTable, renderExampleEnv, replaceTable, TABLE_END, TABLE_START } from '../src/config/config-docs.js'

export { renderConfigTable, renderExampleEnv } from '../src/config/config-docs.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))

function main(args: readonly string[]): void {
  const write = args.includes('--write')
  if (args.includes('--example')) {
    const text = renderExampleEnv()
    if (write) writeFileSync(`${ROOT}config/example.env`, text)
    else process.stdout.write(text)
    return
  }

  const table = renderConfigTable()
  if (!write) {
    process.stdout.write(table)
    return
  }
  const docPath = `${ROOT}${CONFIG_DOC}`
  const updated = existsSync(docPath) ? replaceTable(readFileSync(docPath, 'utf8'), table) : undefined
  if (updated === undefined) {
    process.stderr.write(`${CONFIG_DOC} or its markers (${TABLE_START} … ${TABLE_END}) not found; the table:\n\n`)
    process.stdout.write(table)
    return
  }
  writeFileSync(docPath, updated)
}

// Run only as a script, so a test can import the renderers without side effects.
if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  main(process.argv.slice(2))
}
