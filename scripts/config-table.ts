/**
 * Renders configuration docs from `src/config/schema.ts`.
 *
 *   tsx scripts/config-table.ts                    print the README table
 *   tsx scripts/config-table.ts --write            replace it in README.md between the markers
 *   tsx scripts/config-table.ts --example          print config/example.env
 *   tsx scripts/config-table.ts --example --write  rewrite config/example.env
 *
 * Without README.md or its markers, `--write` prints the table and says where the markers go.
 * @module
 */

import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { renderConfigTable, renderExampleEnv, replaceTable, TABLE_END, TABLE_START } from '../src/config/config-docs.js'

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
  const readmePath = `${ROOT}README.md`
  const updated = existsSync(readmePath) ? replaceTable(readFileSync(readmePath, 'utf8'), table) : undefined
  if (updated === undefined) {
    process.stderr.write(`README.md or its markers (${TABLE_START} … ${TABLE_END}) not found; the table:\n\n`)
    process.stdout.write(table)
    return
  }
  writeFileSync(readmePath, updated)
}

// Run only as a script, so a test can import the renderers without side effects.
if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  main(process.argv.slice(2))
}
