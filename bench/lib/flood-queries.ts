/**
 * The flood's queries: every one distinct, and every one a query the snapshot cannot answer, so
 * that without a budget each would reach the CMS. Six kinds, in turn: a random search, an order
 * with a varying window, a children list with `fields`, an unknown type, an unknown find path,
 * and an absent page's detail with `fields`. The run prefix (in the kinds that can carry one)
 * keeps runs against a shared tier from meeting each other's stored answers; the others are
 * distinct by their offset or id within a run, and every run starts a fresh cms-shield.
 * @module
 */

import type { LatencySummary } from './stats.js'

const API = '/api/v1/cms/pages/'

/** Orderable database fields of every page (Wagtail's `Page`), both directions. */
const ORDERS = ['title', '-title', 'id', '-id', 'slug', '-slug', 'first_published_at', '-first_published_at']
/** `fields=` variants Wagtail accepts for any page type. */
const FIELDS = ['title', '-title', 'seo_title,search_description', '_,id,title', '*', '-detail_url,-html_url', 'html_url,first_published_at', 'show_in_menus,slug']
/** Above any id the generated sites use, below the database's integer range (a larger one is refused locally). */
const ABSENT_ID_BASE = 100_000_000

export const FLOOD_KINDS = ['search', 'order', 'fields', 'type', 'find', 'absent-detail'] as const
export type FloodKind = (typeof FLOOD_KINDS)[number]

export interface FloodQuery {
  kind: FloodKind
  path: string
}

/** The `n`-th query of a run (n counts from 0); `parentIds` are pages whose children lists exist. */
export function floodQuery(run: string, n: number, parentIds: readonly number[]): FloodQuery {
  const kind = FLOOD_KINDS[n % FLOOD_KINDS.length] as FloodKind
  // `i` numbers the queries of one kind; with the run prefix or an offset it makes each one distinct.
  const i = Math.floor(n / FLOOD_KINDS.length)
  switch (kind) {
    case 'search':
      return { kind, path: `${API}?search=flood-${run}-${i}` }
    case 'order':
      return { kind, path: `${API}?order=${ORDERS[i % ORDERS.length]}&limit=${1 + (i % 50)}&offset=${i}` }
    case 'fields': {
      const parent = parentIds[i % Math.max(1, parentIds.length)] ?? 1
      return { kind, path: `${API}?child_of=${parent}&fields=${FIELDS[i % FIELDS.length]}&offset=${i}` }
    }
    case 'type':
      return { kind, path: `${API}?type=cms.Nope${run}x${i}` }
    case 'find':
      return { kind, path: `${API}find/?html_path=/nope-${run}-${i}/` }
    case 'absent-detail':
      return { kind, path: `${API}${ABSENT_ID_BASE + i}/?fields=title` }
  }
}

/** What the flooding client (bench/flood-client.ts) hands back on its last line. */
export interface FloodReport {
  /** Requests sent: every one a distinct query. */
  sent: number
  answered: number
  /** From the first request written to the last answer read. */
  durationMs: number
  /** CPU this client used over that time. */
  cpuSeconds: number
  statuses: Record<string, number>
  statusesByKind: Record<string, Record<string, number>>
  /** Cache-Status of the 200s, without the age: how cms-shield answered them. */
  cacheStatus: Record<string, number>
  /** 429s and 503s without a `Retry-After` of whole seconds. */
  rejectionsWithoutRetryAfter: number
  /** 429s and 503s whose body is not JSON with a string `message`. */
  rejectionsWithoutMessage: number
  retryAfterSeconds: { min: number | null; max: number | null }
  latencyMs: LatencySummary
  /** Answers that took longer than the bound, and requests that got none within it. */
  late: number
  timeouts: number
  errors: number
  errorSamples: string[]
}
