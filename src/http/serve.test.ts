import { describe, expect, it } from 'vitest'
import type { Snapshot } from '../tree/snapshot.js'
import { INTERNAL_ERROR_ANSWER, jsonAnswer, NOT_FOUND_ANSWER, OPTIONS_ANSWER, OVERLOADED_ANSWER, type HttpAnswer } from './answers.js'
import { createApiRouter } from './api-router.js'
import { apiMount } from '../config/api-mount.js'
import type { PagesRequest, PagesService } from './pages-service.js'
import { createServe, type Served, type ServeRequest } from './serve.js'
import { wagtailErrors } from '../query/wagtail-messages.js'

const SNAPSHOT = {} as Snapshot
const LIST: HttpAnswer = { ...jsonAnswer(200, { items: [] }), headers: { 'content-type': 'application/json', etag: '"abc"' }, cache: 'snapshot' }

function setup(overrides: Partial<PagesService> = {}, state = { pressure: false, closing: false }, requestIdOnHits?: boolean) {
  const calls: Array<[string, PagesRequest]> = []
  const errors: object[] = []
  const pages: PagesService = {
    list: (request) => (calls.push(['list', request]), LIST),
    detail: (id, request) => (calls.push([`detail ${id}`, request]), jsonAnswer(200, { id: Number(id) })),
    find: (request) => (calls.push(['find', request]), Promise.resolve({ ...jsonAnswer(200, {}), cache: 'miss' as const })),
    notAcceptable: () => wagtailErrors.notAcceptable,
    ...overrides,
  }
  let ids = 0
  const serve = createServe<ServeRequest>({
    pages,
    snapshot: () => SNAPSHOT,
    isUnderPressure: () => state.pressure,
    isClosing: () => state.closing,
    requestId: (header) => (typeof header === 'string' ? header : `generated-${++ids}`),
    logger: { error: (details) => errors.push(details) },
    ...(requestIdOnHits === undefined ? {} : { requestIdOnHits }),
  })
  return { serve, calls, errors, state }
}

const req = (method: string, url: string, headers: ServeRequest['headers'] = {}): ServeRequest => ({ method, url, headers })

async function served(result: Served | Promise<Served> | undefined): Promise<Served> {
  expect(result).toBeDefined()
  return await result!
}

describe('createApiRouter', () => {
  const routeApiPath = createApiRouter()

  it('routes the API as Django does, on the decoded path', () => {
    expect(routeApiPath('/api/v1/cms/pages/')).toEqual({ kind: 'list' })
    expect(routeApiPath('/api/v1/cms/pages/find/')).toEqual({ kind: 'find' })
    expect(routeApiPath('/api/v1/cms/pages/0042/')).toEqual({ kind: 'detail', id: '0042' })
    expect(routeApiPath('/api/v1/cms/pages/%34%32/')).toEqual({ kind: 'detail', id: '42' })
    expect(routeApiPath('/api/v1/cms/%70ages/')).toEqual({ kind: 'list' })
    for (const path of ['/api/v1/cms/pages', '/api/v1/cms/pages/42', '/api/v1/cms/pages/find']) expect(routeApiPath(path)).toEqual({ kind: 'append-slash' })
    for (const path of ['/api/v1/cms/pages/abc/', '/api/v1/cms/pages/4a/', '/api/v1/cms/pages/1/2/', '/api/v1/cms/pages//', '/api/v1/cms/pages/%zz/']) {
      expect(routeApiPath(path)).toEqual({ kind: 'not-found' })
    }
    for (const path of ['/', '/api/v1/cms/pagesX/', '/api/v1/cms/', '/healthz']) expect(routeApiPath(path)).toBeUndefined()
  })

  it('routes every endpoint of a router mounted elsewhere, and nothing at the default path', () => {
    const route = createApiRouter(apiMount('/api/v2/', 'pages', ['images', 'documents']))
    expect(route('/api/v2/pages/')).toEqual({ kind: 'list' })
    expect(route('/api/v2/pages/7/')).toEqual({ kind: 'detail', id: '7' })
    expect(route('/api/v2/images/')).toEqual({ kind: 'list', endpoint: 'images' })
    expect(route('/api/v2/images/007/')).toEqual({ kind: 'detail', id: '007', endpoint: 'images' })
    expect(route('/api/v2/documents/find/')).toEqual({ kind: 'find', endpoint: 'documents' })
    for (const path of ['/api/v2/images', '/api/v2/documents/3', '/api/v2/images/find']) expect(route(path)).toEqual({ kind: 'append-slash' })
    expect(route('/api/v2/images/x/')).toEqual({ kind: 'not-found' })
    for (const path of ['/api/v1/cms/pages/', '/api/v2/', '/api/v2/videos/', '/api/v2']) expect(route(path)).toBeUndefined()
  })

  it('routes a pages endpoint registered under another name', () => {
    const route = createApiRouter(apiMount('/cms/api/', 'content'))
    expect(route('/cms/api/content/find/')).toEqual({ kind: 'find' })
    expect(route('/cms/api/pages/')).toBeUndefined()
  })
})

describe('serve', () => {
  it('leaves what is not the API to the caller', () => {
    expect(setup().serve(req('GET', '/healthz'))).toBeUndefined()
  })

  it('dispatches as DRF does: GET/HEAD run the view, OPTIONS negotiates, others get 405', async () => {
    const { serve, calls } = setup()
    expect((await served(serve(req('HEAD', '/api/v1/cms/pages/0042/?fields=_')))).labels).toEqual({ route: 'detail', cache: 'none', status: 200 })
    expect(calls[0]![0]).toBe('detail 0042')
    expect(calls[0]![1].rawQuery).toBe('fields=_')
    expect((await served(serve(req('OPTIONS', '/api/v1/cms/pages/')))).answer).toBe(OPTIONS_ANSWER)
    expect((await served(serve(req('OPTIONS', '/api/v1/cms/pages/?format=xml')))).answer.status).toBe(404)
    const post = await served(serve(req('POST', '/api/v1/cms/pages/find/')))
    expect(post.answer.status).toBe(405)
    expect(post.labels.route).toBe('find')
    const redirect = await served(serve(req('GET', '/api/v1/cms/pages/42?a=1')))
    expect(redirect.answer.headers['location']).toBe('/api/v1/cms/pages/42/?a=1')
    expect(redirect.labels.route).toBe('other')
    expect((await served(serve(req('GET', '/api/v1/cms/pages/nope/')))).answer).toBe(NOT_FOUND_ANSWER)
  })

  it('labels the cache outcome from the answer itself, and its 304 alike', async () => {
    const { serve } = setup()
    expect((await served(serve(req('GET', '/api/v1/cms/pages/')))).labels).toEqual({ route: 'list', cache: 'snapshot', status: 200 })
    const conditional = await served(serve(req('GET', '/api/v1/cms/pages/', { 'if-none-match': '"abc"' })))
    expect(conditional.answer.status).toBe(304)
    expect(conditional.labels).toEqual({ route: 'list', cache: 'snapshot', status: 304 })
    expect((await served(serve(req('GET', '/api/v1/cms/pages/find/')))).labels).toEqual({ route: 'find', cache: 'miss', status: 200 })
  })

  it('remembers synchronous reads per URL and Accept: a hit calls no view and shares its labels', async () => {
    const { serve, calls } = setup()
    const first = await served(serve(req('GET', '/api/v1/cms/pages/?limit=1')))
    const second = await served(serve(req('HEAD', '/api/v1/cms/pages/?limit=1')))
    expect(calls).toHaveLength(1)
    expect(second.answer).toBe(first.answer)
    expect(second.labels).toBe(first.labels)
    await served(serve(req('GET', '/api/v1/cms/pages/?limit=1', { accept: 'text/html' })))
    expect(calls).toHaveLength(2)
  })

  it('gives the caller\'s request id, or makes one from X-Request-Id', async () => {
    const { serve } = setup()
    expect((await served(serve(req('GET', '/api/v1/cms/pages/'), 'fastify-id'))).requestId).toBe('fastify-id')
    expect((await served(serve(req('GET', '/api/v1/cms/pages/', { 'x-request-id': 'edge-1' })))).requestId).toBe('edge-1')
    expect((await served(serve(req('GET', '/api/v1/cms/pages/')))).requestId).toBe('generated-1')
  })

  it('gives hits no id of its own with REQUEST_ID_ON_HITS=false, but keeps the client\'s, and every other answer\'s', async () => {
    const { serve } = setup({}, undefined, false)
    const hit = await served(serve(req('GET', '/api/v1/cms/pages/'), 'fastify-id'))
    expect(hit.labels.cache).toBe('snapshot')
    expect(hit.requestId).toBeUndefined()
    expect((await served(serve(req('GET', '/api/v1/cms/pages/', { 'if-none-match': '"abc"' })))).requestId).toBeUndefined()
    expect((await served(serve(req('GET', '/api/v1/cms/pages/', { 'x-request-id': 'edge-1' })))).requestId).toBe('edge-1')
    // A detail here has no cache outcome (not a hit), and a miss went to the CMS: both keep theirs.
    expect((await served(serve(req('GET', '/api/v1/cms/pages/7/')))).requestId).toBe('generated-1')
    expect((await served(serve(req('GET', '/api/v1/cms/pages/find/'), 'fastify-id'))).requestId).toBe('fastify-id')
  })

  it('turns a view that throws or rejects into the proxy failure, and logs it with the request id', async () => {
    const { serve, errors } = setup({
      list: () => { throw new Error('bug') },
      find: () => Promise.reject(new Error('rejected')),
    })
    const thrown = await served(serve(req('GET', '/api/v1/cms/pages/', { 'x-request-id': 'r1' })))
    expect(thrown.answer).toBe(INTERNAL_ERROR_ANSWER)
    expect(thrown.labels).toEqual({ route: 'list', cache: 'none', status: 500 })
    const rejected = await served(serve(req('GET', '/api/v1/cms/pages/find/', { 'x-request-id': 'r2' })))
    expect(rejected.answer).toBe(INTERNAL_ERROR_ANSWER)
    expect(errors).toMatchObject([{ reqId: 'r1', url: '/api/v1/cms/pages/' }, { reqId: 'r2', url: '/api/v1/cms/pages/find/' }])
  })

  it('keeps, across a patch in place, the remembered details of pages it did not replace, and forgets the rest', async () => {
    const dialect = { limitMax: null, emptyTypeIgnored: true, findKeepsQuery: true, nulInTextFilter: 'refused', notAcceptableText: 'x' } as const
    // Only what the serving core reads of a snapshot to decide what to keep.
    const snapshot = (fields: Pick<Snapshot, 'fingerprint' | 'patched'> & { dialect: object }) => fields as unknown as Snapshot
    const before = snapshot({ fingerprint: 'before', dialect })
    const patched = snapshot({ fingerprint: 'after', dialect, patched: { from: 'before', ids: [5] } })
    const rebuilt = snapshot({ fingerprint: 'rebuilt', dialect })
    let current = before
    const calls: string[] = []
    const serve = createServe<ServeRequest>({
      pages: {
        list: () => (calls.push('list'), LIST),
        detail: (id) => (calls.push(`detail ${id}`), { ...jsonAnswer(200, { id: Number(id), under: current.fingerprint }), cache: 'snapshot', page: Number(id) }),
        find: () => Promise.reject(new Error('not asked')),
        notAcceptable: () => wagtailErrors.notAcceptable,
      },
      snapshot: () => current,
      isUnderPressure: () => false,
      isClosing: () => false,
      requestId: () => 'id',
      logger: { error: () => undefined },
    })
    const bodyOf = async (url: string) => (await served(serve(req('GET', url)))).answer.body.toString()
    for (const url of ['/api/v1/cms/pages/4/', '/api/v1/cms/pages/5/', '/api/v1/cms/pages/']) await bodyOf(url)
    expect(calls).toEqual(['detail 4', 'detail 5', 'list'])
    current = patched
    expect(await bodyOf('/api/v1/cms/pages/4/')).toContain('"under": "before"')
    expect(await bodyOf('/api/v1/cms/pages/5/')).toContain('"under": "after"')
    await bodyOf('/api/v1/cms/pages/')
    // Page 4's detail was kept; page 5's (replaced) and the listing (many pages) were asked again.
    expect(calls.slice(3)).toEqual(['detail 5', 'list'])
    // A snapshot that is not a patch of the last one keeps nothing.
    current = rebuilt
    expect(await bodyOf('/api/v1/cms/pages/4/')).toContain('"under": "rebuilt"')
    // Nor does a patch under another dialect (the plans depend on it).
    current = snapshot({ fingerprint: 'other', dialect: { ...dialect, limitMax: 20 }, patched: { from: 'rebuilt', ids: [] } })
    expect(await bodyOf('/api/v1/cms/pages/4/')).toContain('"under": "other"')
  })

  it('sheds every API request under pressure, remembered or not', async () => {
    const { serve, state, calls } = setup()
    await served(serve(req('GET', '/api/v1/cms/pages/')))
    state.pressure = true
    for (const url of ['/api/v1/cms/pages/', '/api/v1/cms/pages/7/', '/api/v1/cms/pages/x/']) {
      const shed = await served(serve(req('GET', url)))
      expect(shed.answer).toBe(OVERLOADED_ANSWER)
      expect(shed.labels.status).toBe(503)
    }
    expect(calls).toHaveLength(1)
  })

  it('adds Connection: close while closing, on a twin built once per answer', async () => {
    const { serve, state } = setup()
    const open = await served(serve(req('GET', '/api/v1/cms/pages/')))
    state.closing = true
    const first = await served(serve(req('GET', '/api/v1/cms/pages/')))
    const second = await served(serve(req('GET', '/api/v1/cms/pages/')))
    expect(first.answer.headers).toEqual({ ...open.answer.headers, connection: 'close' })
    expect(second.answer).toBe(first.answer)
    expect(open.answer.headers['connection']).toBeUndefined()
  })
})
