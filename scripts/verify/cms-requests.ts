/**
 * What answering the corpus cost the CMS: the read-through requests cms-shield made, from its own
 * `/metrics` before and after (`cms_shield_cms_requests_total{class="read_through"}`), and which
 * of the `fields` and `order` requests caused one, from each answer's `Cache-Status` (`fwd=miss`
 * without `collapsed`: this request was sent on to the CMS; docs/operations.md, "Cache-Status").
 * Pure but for the one metrics read.
 * @module
 */
import { FIELDS_KIND, ORDER_KIND } from './fields-order-corpus.js'
import type { Endpoint } from './http-exchange.js'
import type { Exchange, Result } from './types.js'

const READ_THROUGH = /^cms_shield_cms_requests_total\{([^}]*)\}\s+([0-9.eE+-]+)\s*$/

/** The sum of the read-through samples in a Prometheus text (0 before the first); `undefined` without the metric. */
export function readThroughTotal(metrics: string): number | undefined {
  let total = metrics.includes('# TYPE cms_shield_cms_requests_total counter') ? 0 : undefined
  for (const line of metrics.split('\n')) {
    const match = READ_THROUGH.exec(line)
    if (match && /(^|,)class="read_through"(,|$)/.test(match[1]!)) total = (total ?? 0) + Number(match[2])
  }
  return total
}

/** The shield's read-through requests so far, or `undefined` when its `/metrics` cannot say. */
export async function shieldReadThrough(shield: Endpoint, headers: Record<string, string>): Promise<number | undefined> {
  const exchange = await shield.send('GET', '/metrics', headers)
  if (!exchange.ok || exchange.answer.status !== 200) return undefined
  return readThroughTotal(exchange.answer.body.toString('utf8'))
}

/** Whether the shield sent this request on to the CMS (its own request, not one it joined). */
export function askedTheCms(exchange: Exchange): boolean {
  if (!exchange.ok) return false
  const status = exchange.answer.headers['cache-status'] ?? ''
  return /(^|;)\s*fwd=miss(\s*;|$)/.test(status) && !/(^|;)\s*collapsed(\s*;|$)/.test(status)
}

/** Per kind of the `fields` and `order` part: requests sent, and those that cost a CMS request. */
export function fieldsOrderCost(results: readonly Result[]): Map<string, { readonly requests: number; readonly asked: number }> {
  const byKind = new Map<string, { requests: number; asked: number }>()
  for (const result of results) {
    const { kind } = result.request
    if (!kind.startsWith(FIELDS_KIND) && !kind.startsWith(ORDER_KIND)) continue
    const entry = byKind.get(kind) ?? { requests: 0, asked: 0 }
    entry.requests++
    if (askedTheCms(result.shield)) entry.asked++
    byKind.set(kind, entry)
  }
  return new Map([...byKind].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
}
