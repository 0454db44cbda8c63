import { describe, expect, it } from 'vitest'
import { createSiteOfHost } from './site-of-host.js'

describe('the Site of a Host header', () => {
  const siteOf = createSiteOfHost(['partner.example.com', 'shop.example.com'])

  it('is a configured Site named by the hostname, whatever the port, case or trailing dot', () => {
    for (const host of ['partner.example.com', 'partner.example.com:8443', 'PARTNER.Example.com', 'partner.example.com.:80']) {
      expect(siteOf(host), host).toBe('partner.example.com')
    }
    expect(siteOf('shop.example.com')).toBe('shop.example.com')
  })

  it('is the default Site (undefined) for any other Host, none, or an IPv6 literal', () => {
    for (const host of [undefined, '', 'example.com', 'www.partner.example.com', 'partner.example.com.evil', '[::1]:8080', '127.0.0.1']) {
      expect(siteOf(host), String(host)).toBeUndefined()
    }
  })

  it('is always the default Site when no Sites are configured', () => {
    expect(createSiteOfHost([])('partner.example.com')).toBeUndefined()
  })
})
