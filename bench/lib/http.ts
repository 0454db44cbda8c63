/**
 * Small, bounded HTTP helpers for the orchestrator's own calls (readiness, metrics, control API,
 * PURGE, webhook): every call has a timeout, and every loop a deadline.
 * @module
 */
import { createServer } from 'node:net'

export interface SimpleResponse {
  status: number
  headers: Headers
  body: Buffer
}

export interface CallOptions {
  method?: string
  headers?: Record<string, string>
  body?: string
  timeoutMs?: number
}

export async function call(url: string, options: CallOptions = {}): Promise<SimpleResponse> {
  const response = await fetch(url, {
    method: options.method ?? 'GET',
    headers: options.headers ?? {},
    ...(options.body === undefined ? {} : { body: options.body }),
    redirect: 'manual',
    signal: AbortSignal.timeout(options.timeoutMs ?? 10_000),
  })
  return { status: response.status, headers: response.headers, body: Buffer.from(await response.arrayBuffer()) }
}

/** POSTs JSON and returns the parsed answer; anything but a 2xx is an error. */
export async function postJson<T>(url: string, payload: unknown, timeoutMs = 30_000): Promise<T> {
  const response = await call(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(payload),
    timeoutMs,
  })
  if (response.status < 200 || response.status > 299) throw new Error(`POST ${url}: ${response.status} ${response.body.toString('utf8')}`)
  return JSON.parse(response.body.toString('utf8')) as T
}

export async function getJson<T>(url: string, timeoutMs = 10_000): Promise<T> {
  const response = await call(url, { timeoutMs })
  if (response.status !== 200) throw new Error(`GET ${url}: ${response.status} ${response.body.toString('utf8').slice(0, 200)}`)
  return JSON.parse(response.body.toString('utf8')) as T
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

/** Thrown by a `waitFor` probe to stop waiting at once (the process it waits on has died). */
export class GiveUp extends Error {}

/** Polls `probe` every `intervalMs` until it returns a value other than undefined; throws after `timeoutMs`. */
export async function waitFor<T>(what: string, timeoutMs: number, intervalMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const until = Date.now() + timeoutMs
  let lastError: unknown
  for (;;) {
    try {
      const value = await probe()
      if (value !== undefined) return value
    } catch (error) {
      if (error instanceof GiveUp) throw error
      lastError = error
    }
    if (Date.now() >= until) {
      const reason = lastError instanceof Error ? ` (last error: ${lastError.message})` : ''
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${reason}`)
    }
    await sleep(intervalMs)
  }
}

/** A port that was free a moment ago on 127.0.0.1 (cms-shield does not print the port it bound). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      const port = address !== null && typeof address === 'object' ? address.port : 0
      server.close(() => (port > 0 ? resolve(port) : reject(new Error('no free port'))))
    })
  })
}

/** Prometheus text exposition: one sample per line, `name{labels} value`. */
export interface MetricSample {
  name: string
  labels: Record<string, string>
  value: number
}

export function parseMetrics(text: string): MetricSample[] {
  const samples: MetricSample[] = []
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line)
    if (!match) continue
    const labels: Record<string, string> = {}
    for (const pair of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[pair[1] as string] = pair[2] as string
    }
    samples.push({ name: match[1] as string, labels, value: Number(match[3]) })
  }
  return samples
}

/** The sum of every sample of `name` whose labels include `filter`. */
export function metricSum(samples: readonly MetricSample[], name: string, filter: Record<string, string> = {}): number {
  let sum = 0
  for (const sample of samples) {
    if (sample.name !== name) continue
    if (Object.entries(filter).every(([key, value]) => sample.labels[key] === value)) sum += sample.value
  }
  return sum
}

export function hasMetric(samples: readonly MetricSample[], name: string): boolean {
  return samples.some((sample) => sample.name === name)
}
