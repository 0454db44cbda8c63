import Fastify from 'fastify'
import { describe, expect, it } from 'vitest'
import { loadConfig } from '../config/load-config.js'
import { serverOptions } from './server.js'

const config = loadConfig({ UPSTREAM_URL: 'https://cms.example', BASE_URL: 'https://api.example' })

describe('server options', () => {
  it('serves routes that declare no JSON schema', async () => {
    const app = Fastify(serverOptions({ config, logger: false, fastPath: () => undefined }))
    app.get('/plain', async () => ({ ok: true }))
    const response = await app.inject('/plain')
    expect(response.statusCode).toBe(200)
    expect(response.json()).toEqual({ ok: true })
    await app.close()
  })

  it('refuses at start a route that brings a JSON schema, saying where validation belongs', async () => {
    const app = Fastify(serverOptions({ config, logger: false, fastPath: () => undefined }))
    app.get('/typed', { schema: { querystring: { type: 'object', properties: { id: { type: 'integer' } } } } }, async () => ({ ok: true }))
    await expect(app.ready()).rejects.toThrow('cms-shield routes declare no JSON schemas')
  })

  it('refuses a response schema too', async () => {
    const app = Fastify(serverOptions({ config, logger: false, fastPath: () => undefined }))
    app.get('/typed', { schema: { response: { 200: { type: 'object' } } } }, async () => ({ ok: true }))
    await expect(app.ready()).rejects.toThrow('cms-shield routes declare no JSON schemas')
  })
})
