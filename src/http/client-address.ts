/**
 * Who the client is, for its share of the CMS budget: the socket's address, or, when the socket
 * belongs to a trusted load balancer (TRUST_PROXY), the address that balancer put in
 * `X-Forwarded-For`. The header is read from the right (RFC 7239 §5.2 and common practice: each
 * proxy appends the address it saw), skipping trusted hops; the first untrusted address is the
 * client. Anything left of it was written by the client and could be forged, so it is ignored.
 * @module
 */
import { isIP } from 'node:net'
import type { AddressList } from '../config/cidr.js'

/** `::ffff:192.0.2.1` and `192.0.2.1` are one client, not two shares. */
function normalised(address: string): string {
  return address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address
}

export function clientAddressOf(
  socketAddress: string | undefined,
  forwardedFor: string | string[] | undefined,
  trusted: AddressList,
): string | undefined {
  if (socketAddress === undefined) return undefined
  const socket = normalised(socketAddress)
  if (forwardedFor === undefined || !trusted.has(socketAddress)) return socket
  const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor).split(',')
  let client = socket
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = hops[i]!.trim()
    // A hop that is not an address ends the chain: nothing left of it can be trusted either.
    if (isIP(hop) === 0) return client
    client = normalised(hop)
    if (!trusted.has(hop)) return client
  }
  return client
}
