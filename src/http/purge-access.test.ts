import { describe, expect, it } from 'vitest'
import { parseCidrList, type AddressList } from '../config/cidr.js'
import { createPurgeAccess, createSecretCheck } from './purge-access.js'

function list(text: string): AddressList {
  const parsed = parseCidrList(text)
  if (!parsed.ok) throw new Error(parsed.reason)
  return parsed.list
}

const TOKEN = 'a-long-random-purge-token'

describe('createPurgeAccess', () => {
  it('lets in sources inside PURGE_ALLOW, IPv4-mapped IPv6 included, without a token', () => {
    const access = createPurgeAccess({ allow: list('127.0.0.1/32,::1/128,10.0.0.0/8') })
    expect(access.check('127.0.0.1', undefined)).toBe(true)
    expect(access.check('::ffff:127.0.0.1', undefined)).toBe(true)
    expect(access.check('::1', undefined)).toBe(true)
    expect(access.check('10.20.30.40', undefined)).toBe(true)
  })

  it('refuses other sources, and an unknown source address, when no token is configured', () => {
    const access = createPurgeAccess({ allow: list('127.0.0.1/32') })
    expect(access.check('192.168.1.5', undefined)).toBe(false)
    expect(access.check('192.168.1.5', 'anything')).toBe(false)
    expect(access.check(undefined, undefined)).toBe(false)
  })

  it('lets any source in with the configured X-Purge-Token', () => {
    const access = createPurgeAccess({ allow: list('none'), token: TOKEN })
    expect(access.check('203.0.113.9', TOKEN)).toBe(true)
    expect(access.check(undefined, TOKEN)).toBe(true)
  })

  it('refuses a wrong, truncated, extended, empty or repeated token', () => {
    const access = createPurgeAccess({ allow: list('none'), token: TOKEN })
    for (const header of [undefined, '', 'wrong', TOKEN.slice(0, -1), `${TOKEN}x`, ` ${TOKEN}`, TOKEN.toUpperCase(), [TOKEN, TOKEN], [TOKEN]]) {
      expect(access.check('203.0.113.9', header), JSON.stringify(header)).toBe(false)
    }
  })

  it('treats an empty configured token as no token (an empty header must not get in)', () => {
    const access = createPurgeAccess({ allow: list('none'), token: '' })
    expect(access.check('203.0.113.9', '')).toBe(false)
  })

  it('does not need the token from an allowed source, whatever the header says', () => {
    const access = createPurgeAccess({ allow: list('127.0.0.1'), token: TOKEN })
    expect(access.check('127.0.0.1', 'wrong')).toBe(true)
  })
})

describe('createSecretCheck', () => {
  it('matches exactly the secret, including non-ASCII text', () => {
    const matches = createSecretCheck('sécret-☃-token')
    expect(matches('sécret-☃-token')).toBe(true)
    expect(matches('secret-☃-token')).toBe(false)
    expect(matches('')).toBe(false)
  })

  it('refuses to be built for an empty secret', () => {
    expect(() => createSecretCheck('')).toThrow(/must not be empty/)
  })
})
