import fc from 'fast-check'
import { pino } from 'pino'
import { describe, expect, it } from 'vitest'
import type { ShieldEvents } from '../observability/shield-events.js'
import { createAfterAnswer, unservedLabels } from './after-answer.js'

const routeOf = (method: string, url: string) => unservedLabels(method, url, 200).route

describe('unservedLabels', () => {
  it('names the API views, the operational routes, PURGE and everything else', () => {
    expect(routeOf('GET', '/api/v1/cms/pages/?child_of=2')).toBe('list')
    expect(routeOf('HEAD', '/api/v1/cms/pages/0042/')).toBe('detail')
    expect(routeOf('GET', '/api/v1/cms/pages/find/?html_path=/')).toBe('find')
    expect(routeOf('GET', '/api/v1/cms/pages/%66ind/')).toBe('find')
    expect(routeOf('GET', '/api/v1/cms/pages/abc/')).toBe('other')
    expect(routeOf('GET', '/api/v1/cms/pages')).toBe('other')
    expect(routeOf('PURGE', '/blog/')).toBe('purge')
    expect(routeOf('PURGE', '/api/v1/cms/pages/2/')).toBe('purge')
    expect(routeOf('POST', '/-/refresh')).toBe('refresh')
    expect(routeOf('GET', '/healthz')).toBe('healthz')
    expect(routeOf('GET', '/readyz')).toBe('readyz')
    expect(routeOf('GET', '/metrics?x=1')).toBe('metrics')
    expect(routeOf('GET', '/wp-admin/')).toBe('other')
    expect(routeOf('GET', '/constructor')).toBe('other')
    expect(unservedLabels('GET', '/healthz', 204)).toEqual({ route: 'healthz', cache: 'none', status: 204 })
  })

  it('only ever answers one of a few names, whatever the URL (bounded label values)', () => {
    const names = new Set(['list', 'detail', 'find', 'purge', 'refresh', 'healthz', 'readyz', 'metrics', 'other'])
    fc.assert(fc.property(fc.string(), fc.string(), (method, url) => names.has(routeOf(method, url))))
  })
})

describe('createAfterAnswer', () => {
  it('writes one line and emits one event with the same labels', () => {
    const lines: Array<{ details: object; message: string }> = []
    const seen: unknown[] = []
    const events = { emit: (name: string, event: unknown) => seen.push([name, event]) } as Pick<ShieldEvents, 'emit'>
    const after = createAfterAnswer({ level: 'info', info: (details, message) => lines.push({ details, message }) }, events)
    after('id-1', 'GET', '/api/v1/cms/pages/', { route: 'list', cache: 'snapshot', status: 200 }, 1.6)
    expect(lines).toEqual([{ details: { reqId: 'id-1', method: 'GET', url: '/api/v1/cms/pages/', route: 'list', statusCode: 200, cache: 'snapshot', ms: 2 }, message: 'request' }])
    expect(seen).toEqual([['request', { route: 'list', method: 'GET', status: 200, cache: 'snapshot', durationMs: 1.6 }]])
  })

  it('builds no line when info is off, and still emits', () => {
    let emitted = 0
    const events = { emit: () => emitted++ } as unknown as Pick<ShieldEvents, 'emit'>
    const after = createAfterAnswer({ level: 'warn', info: () => { throw new Error('not at warn') } }, events)
    after('id-2', 'HEAD', '/x', { route: 'other', cache: 'none', status: 404 }, 0)
    expect(emitted).toBe(1)
  })

  it('follows a level set after it was made (pino\'s level-change)', () => {
    const written: string[] = []
    const logger = pino({ level: 'warn' }, { write: (line: string) => void written.push(line) })
    const events = { emit: () => undefined } as unknown as Pick<ShieldEvents, 'emit'>
    const after = createAfterAnswer(logger, events)
    const labels = { route: 'detail', cache: 'snapshot', status: 200 } as const
    after('id-3', 'GET', '/api/v1/cms/pages/2/', labels, 0)
    expect(written).toHaveLength(0)
    logger.level = 'info'
    after('id-4', 'GET', '/api/v1/cms/pages/2/', labels, 0)
    logger.level = 'error'
    after('id-5', 'GET', '/api/v1/cms/pages/2/', labels, 0)
    expect(written.map((line) => (JSON.parse(line) as { reqId: string }).reqId)).toEqual(['id-4'])
  })
})
