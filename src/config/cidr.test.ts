import { describe, expect, it } from 'vitest'
import { parseCidrList } from './cidr.js'

function list(text: string) {
  const parsed = parseCidrList(text)
  if (!parsed.ok) throw new Error(parsed.reason)
  return parsed.list
}

describe('parseCidrList', () => {
  it('matches loopback by default entries, including IPv4-mapped IPv6 peers', () => {
    const allow = list('127.0.0.1/32,::1/128')
    expect(allow.has('127.0.0.1')).toBe(true)
    expect(allow.has('::ffff:127.0.0.1')).toBe(true)
    expect(allow.has('::1')).toBe(true)
    expect(allow.has('127.0.0.2')).toBe(false)
    expect(allow.has('10.0.0.1')).toBe(false)
    expect(allow.has(undefined)).toBe(false)
    expect(allow.has('not-an-ip')).toBe(false)
  })

  it('reads bare addresses as single hosts and wide prefixes as networks', () => {
    const allow = list(' 10.0.0.0/8 , 192.168.1.7, fd00::/8 ')
    expect(allow.entries).toEqual(['10.0.0.0/8', '192.168.1.7/32', 'fd00::/8'])
    expect(allow.has('10.200.3.4')).toBe(true)
    expect(allow.has('192.168.1.7')).toBe(true)
    expect(allow.has('192.168.1.8')).toBe(false)
    expect(allow.has('fd12::1')).toBe(true)
  })

  it('allows nobody with none', () => {
    expect(list('none').has('127.0.0.1')).toBe(false)
    expect(list('none').entries).toEqual([])
  })

  it('refuses what is not a CIDR, saying which entry', () => {
    expect(parseCidrList('10.0.0.0/8,localhost')).toEqual({ ok: false, reason: expect.stringContaining('"localhost"') })
    expect(parseCidrList('10.0.0.0/33')).toEqual({ ok: false, reason: expect.stringContaining('0–32') })
    expect(parseCidrList('::1/129')).toEqual({ ok: false, reason: expect.stringContaining('0–128') })
    expect(parseCidrList('10.0.0.0/x')).toMatchObject({ ok: false })
  })
})
