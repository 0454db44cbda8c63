import { MockAgent } from 'undici'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createHttpClient } from './http-client.js'
import { apiMount } from '../config/api-mount.js'
import { createWagtailClient, rawPath, type WagtailClient } from './wagtail-client.js'

const ORIGIN = 'http://cms.test'
const API = '/wagtail/api/v1/cms/pages/'

let agent: MockAgent
let wagtail: WagtailClient

beforeEach(() => {
  agent = new MockAgent()
  agent.disableNetConnect()
  const http = createHttpClient({
    baseUrl: `${ORIGIN}/wagtail`, dispatcher: agent, connections: 1, timeoutMs: 1_000, retries: 0, maxBodyBytes: 1 << 20,
  })
  wagtail = createWagtailClient({ http })
})

afterEach(async () => {
  await agent.close()
})

const cms = () => agent.get(ORIGIN)

describe('paths', () => {
  it.each(['../admin/', '/api/v1/cms/pages/', '', '?a=b', 'pages', 'pages/4', 'pages/abc/', 'pages/4/extra/', 'pages/?a=b#frag', 'pages/?a b', 'pages/find/../../', 'images/'])(
    'refuses read-through path %j',
    (path) => {
      expect(() => rawPath(path)).toThrow(TypeError)
    },
  )

  it.each(['pages/', 'pages/?search=blog&order=-title', 'pages/4/', 'pages/004/?fields=*', 'pages/find/?html_path=blog-one'])('allows read-through path %j', (path) => {
    expect(rawPath(path)).toBe(`/api/v1/cms/${path}`)
  })

  it('allows the configured endpoints of a router mounted elsewhere, and only those', () => {
    const mount = apiMount('/api/v2/', 'pages', ['images', 'my-docs'])
    expect(rawPath('images/3/?fields=*', mount)).toBe('/api/v2/images/3/?fields=*')
    expect(rawPath('my-docs/find/?id=2', mount)).toBe('/api/v2/my-docs/find/?id=2')
    expect(() => rawPath('documents/', mount)).toThrow(TypeError)
    expect(() => rawPath('images/../pages/', mount)).toThrow(TypeError)
  })

  it('knows the absolute URL of the CMS API, path prefix included', () => {
    expect(wagtail.apiUrl).toBe('http://cms.test/wagtail/api/v1/cms/pages/')
  })
})

describe('raw', () => {
  it('returns find\'s 302 with its Location, unfollowed', async () => {
    cms().intercept({ path: `${API}find/?html_path=blog-one`, method: 'GET' })
      .reply(302, '', { headers: { location: 'http://localhost/api/v1/cms/pages/4/?', 'content-type': 'text/html; charset=utf-8' } })

    const response = await wagtail.raw('pages/find/?html_path=blog-one')

    expect(response.status).toBe(302)
    expect(response.headers.location).toBe('http://localhost/api/v1/cms/pages/4/?')
  })

  it('passes any status through raw, for read-through to relay', async () => {
    cms().intercept({ path: `${API}find/?id=abc`, method: 'GET' }).reply(500, 'boom')

    const response = await wagtail.raw('pages/find/?id=abc')

    expect(response.status).toBe(500)
    expect(response.text()).toBe('boom')
  })
})
