/**
 * What the operator reads at the end, and what `--out` writes. Pure: a run in, text or JSON out.
 * The last line is always `verify: X/Y identical`, X counting answers that match or differ only
 * where docs/wagtail-compatibility.md says cms-shield differs on purpose.
 * @module
 */
import { askedTheCms, fieldsOrderCost } from './cms-requests.js'
import type { VerifyRun } from './run-verify.js'
import type { Exchange, Result, VerifyRequest } from './types.js'

const MAX_GROUPS = 20
const EXAMPLES_PER_GROUP = 3

export function describeRequest(request: VerifyRequest): string {
  const accept = request.accept === undefined ? '' : ` [Accept: ${request.accept}]`
  const target = request.target.length > 200 ? `${request.target.slice(0, 200)}… (${request.target.length} chars)` : request.target
  return `#${request.n} ${request.method} ${target}${accept}`
}

const statusOf = (exchange: Exchange): string => (exchange.ok ? String(exchange.answer.status) : 'no answer')

export function identicalCount(run: Pick<VerifyRun, 'counts'>): number {
  return run.counts.identical + run.counts.documented
}

export function passed(run: Pick<VerifyRun, 'counts' | 'results'>): boolean {
  return identicalCount(run) === run.results.length
}

function groups(results: readonly Result[]): Map<string, Result[]> {
  const byGroup = new Map<string, Result[]>()
  for (const result of results) {
    const view = result.request.endpoint === undefined ? result.request.view : `${result.request.endpoint} ${result.request.view}`
    const key = `${view}: ${result.verdict.group ?? result.verdict.outcome}`
    byGroup.set(key, [...(byGroup.get(key) ?? []), result])
  }
  return new Map([...byGroup].sort((a, b) => b[1].length - a[1].length))
}

export function formatReport(run: VerifyRun): string[] {
  const lines: string[] = []
  const bad = run.results.filter((result) => result.verdict.outcome === 'differ' || result.verdict.outcome === 'failed')
  if (bad.length > 0) {
    lines.push(`Differences (${bad.length}), grouped by what differs first:`)
    const grouped = [...groups(bad)]
    for (const [key, members] of grouped.slice(0, MAX_GROUPS)) {
      lines.push(`  ${key} — ${members.length} request${members.length === 1 ? '' : 's'}`)
      for (const result of members.slice(0, EXAMPLES_PER_GROUP)) {
        lines.push(`    ${describeRequest(result.request)}: cms ${statusOf(result.cms)}, shield ${statusOf(result.shield)}`)
        for (const note of result.verdict.notes) lines.push(`      ${note}`)
      }
      if (members.length > EXAMPLES_PER_GROUP) lines.push(`    … and ${members.length - EXAMPLES_PER_GROUP} more (all in --out)`)
    }
    if (grouped.length > MAX_GROUPS) lines.push(`  … and ${grouped.length - MAX_GROUPS} more groups (all in --out)`)
  }
  const { counts } = run
  if (counts.documented > 0) {
    const reasons = new Map<string, number>()
    for (const result of run.results) {
      if (result.verdict.outcome !== 'documented') continue
      const reason = (result.verdict.group ?? '').replace(/^documented: /, '')
      reasons.set(reason, (reasons.get(reason) ?? 0) + 1)
    }
    const list = [...reasons].map(([reason, count]) => `${reason} ×${count}`).join(', ')
    lines.push(`verify: ${counts.documented} answers differ only where cms-shield differs on purpose (README): ${list}`)
  }
  if (counts.failed > 0) lines.push(`verify: ${counts.failed} requests got no answer from one side (timeout or connection error)`)
  if (counts['over-budget'] > 0) {
    lines.push(
      `verify: ${counts['over-budget']} requests not compared (shield over budget): its read-through budget refused them with 429/503.`,
      '        Run the shield you verify with a budget at least the verify rate, e.g. READ_THROUGH_RATE and',
      '        READ_THROUGH_CLIENT_RATE >= --rate (and their _BURST likewise), or lower --rate.',
    )
    const busy = run.results.filter((result) => result.verdict.outcome === 'over-budget' && result.shield.ok && result.shield.answer.status === 503).length
    if (busy > 0) {
      lines.push(
        `        ${busy} of them were 503s: the shield's read-throughs waited longer than READ_THROUGH_QUEUE_TIMEOUT for one of`,
        '        READ_THROUGH_CONCURRENCY places (a CMS slower than --rate needs): raise those two, or lower --rate.',
      )
    }
  }
  lines.push(...costLines(run))
  lines.push(`verify: ${identicalCount(run)}/${run.results.length} identical`)
  return lines
}

/** What the corpus cost the CMS: all read-through, and the `fields` and `order` requests by form. */
function costLines(run: VerifyRun): string[] {
  const lines: string[] = []
  if (run.readThrough !== undefined) lines.push(`verify: cms-shield asked the CMS ${run.readThrough} times while answering the corpus (read-through, from its /metrics)`)
  const cost = fieldsOrderCost(run.results)
  const requests = [...cost.values()].reduce((sum, each) => sum + each.requests, 0)
  if (requests === 0) return lines
  const asked = [...cost.values()].reduce((sum, each) => sum + each.asked, 0)
  lines.push(`verify: fields and order: ${asked} of ${requests} requests asked the CMS (Cache-Status fwd=miss)${asked > 0 ? ':' : ''}`)
  for (const [kind, each] of cost) if (each.asked > 0) lines.push(`  ${kind} — ${each.asked} of ${each.requests}`)
  return lines
}

function exchangeJson(exchange: Exchange, withBody: boolean): unknown {
  if (!exchange.ok) return { error: exchange.error }
  const { status, headers, body } = exchange.answer
  return withBody ? { status, headers, body: body.toString('utf8') } : { status, headers, bytes: body.length }
}

/** Everything, for `--out`: bodies only where the answers were not identical. */
export function resultsJson(run: VerifyRun, options: Record<string, unknown>): unknown {
  return {
    options,
    paths: run.paths,
    ...(run.host === undefined ? {} : { host: run.host }),
    bases: run.bases,
    limitMax: run.site.limitMax,
    pages: run.site.pages.length,
    types: run.site.types.map((type) => type.name),
    locales: run.site.locales,
    endpoints: (run.site.media ?? []).map((endpoint) => ({ name: endpoint.name, items: endpoint.ids.length, tags: endpoint.tags })),
    discoveryRequests: run.discoveryRequests,
    counts: run.counts,
    ...(run.readThrough === undefined ? {} : { readThrough: run.readThrough }),
    fieldsOrderCost: Object.fromEntries(fieldsOrderCost(run.results)),
    identical: identicalCount(run),
    total: run.results.length,
    results: run.results.map((result) => {
      const keep = result.verdict.outcome !== 'identical'
      return {
        ...result.request,
        outcome: result.verdict.outcome,
        notes: result.verdict.notes,
        askedTheCms: askedTheCms(result.shield),
        cms: exchangeJson(result.cms, keep),
        shield: exchangeJson(result.shield, keep),
      }
    }),
  }
}
