/**
 * `npm run verify -- --cms <URL> --shield <URL>`: before putting cms-shield in front of a CMS,
 * send both the same seeded corpus of pages API requests — built from that CMS's own tree, page
 * types and fields — at a bounded rate, and report every answer that differs. Exit code 0 when
 * all are identical (or differ only where docs/wagtail-compatibility.md says cms-shield differs on
 * purpose), 1 when not, 2 for a usage error or when discovery fails. See docs/operations.md,
 * "Verifying cms-shield against your CMS".
 * @module
 */
import { writeFileSync } from 'node:fs'
import { parseCliOptions, USAGE, UsageError } from './verify/cli-options.js'
import { formatReport, passed, resultsJson } from './verify/report.js'
import { runVerify } from './verify/run-verify.js'

async function main(): Promise<number> {
  let options
  try {
    options = parseCliOptions(process.argv.slice(2))
  } catch (error) {
    if (!(error instanceof UsageError)) throw error
    process.stderr.write(`verify: ${error.message}\n\n${USAGE}\n`)
    return 2
  }
  let run
  try {
    run = await runVerify({ ...options, log: (line) => process.stderr.write(`${line}\n`) })
  } catch (error) {
    process.stderr.write(`verify: could not run: ${(error as Error).message}\n`)
    return 2
  }
  if (options.out !== undefined) {
    writeFileSync(options.out, `${JSON.stringify(resultsJson(run, { ...options }), null, 2)}\n`)
    process.stderr.write(`verify: results written to ${options.out}\n`)
  }
  process.stdout.write(`${formatReport(run).join('\n')}\n`)
  return passed(run) ? 0 : 1
}

process.exitCode = await main()
