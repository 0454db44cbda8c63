import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { parseCidrList, type AddressList } from '../config/cidr.js'
import { clientAddressOf } from './client-address.js'

function list(text: string): AddressList {
  const parsed = parseCidrList(text)
  if (!parsed.ok) throw new Error(parsed.reason)
  return parsed.list
}

const none = list('none')
const balancers = list('10.0.0.0/8,::1/128')

describe('client address', () => {
  it('is the socket address when the socket is not a trusted proxy, whatever X-Forwarded-For says', () => {
    expect(clientAddressOf('203.0.113.9', '198.51.100.1', none)).toBe('203.0.113.9')
    expect(clientAddressOf('203.0.113.9', '198.51.100.1', balancers)).toBe('203.0.113.9')
  })

  it('is the address a trusted balancer forwarded', () => {
    expect(clientAddressOf('10.1.2.3', '198.51.100.1', balancers)).toBe('198.51.100.1')
    expect(clientAddressOf('::1', ['198.51.100.1'], balancers)).toBe('198.51.100.1')
  })

  it('reads the chain from the right, so an address the client wrote itself is ignored', () => {
    expect(clientAddressOf('10.1.2.3', '1.1.1.1, 198.51.100.1', balancers)).toBe('198.51.100.1')
    expect(clientAddressOf('10.1.2.3', '1.1.1.1, 198.51.100.1, 10.9.9.9', balancers)).toBe('198.51.100.1')
    expect(clientAddressOf('10.1.2.3', ['1.1.1.1', '198.51.100.1, 10.9.9.9'], balancers)).toBe('198.51.100.1')
  })

  it('stops at a hop that is not an address', () => {
    expect(clientAddressOf('10.1.2.3', 'junk, 198.51.100.1', balancers)).toBe('198.51.100.1')
    expect(clientAddressOf('10.1.2.3', '198.51.100.1, unknown', balancers)).toBe('10.1.2.3')
  })

  it('is the leftmost hop when every hop is trusted', () => {
    expect(clientAddressOf('10.1.2.3', '10.0.0.7, 10.0.0.8', balancers)).toBe('10.0.0.7')
  })

  it('counts an IPv4-mapped IPv6 socket address as the IPv4 client', () => {
    expect(clientAddressOf('::ffff:203.0.113.9', undefined, none)).toBe('203.0.113.9')
  })

  it('never lets an untrusted socket choose its client address', () => {
    fc.assert(
      fc.property(fc.ipV4(), fc.array(fc.oneof(fc.ipV4(), fc.ipV6(), fc.string())), (socket, hops) => {
        fc.pre(!socket.startsWith('10.'))
        expect(clientAddressOf(socket, hops.join(','), balancers)).toBe(socket)
      }),
    )
  })
})
