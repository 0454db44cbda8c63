/**
 * Address lists such as `PURGE_ALLOW` (`127.0.0.1/32,::1/128,10.0.0.0/8`): parsed once at boot into
 * a `net.BlockList`, which matches IPv4, IPv6 and IPv4-mapped IPv6 (`::ffff:127.0.0.1`) addresses.
 * A bare address is its own /32 or /128; `none` allows nobody.
 * @module
 */
import { BlockList, isIP } from 'node:net'

export type CidrListResult =
  | { readonly ok: true; readonly list: AddressList }
  | { readonly ok: false; readonly reason: string }

export interface AddressList {
  /** The entries as written, normalised (`10.0.0.0/8`), for logs. */
  readonly entries: readonly string[]
  /** True when `address` (as a socket reports it) is inside one of the entries. */
  has(address: string | undefined): boolean
  /** How a log line (the config at start) shows the list: as it would be written. */
  toJSON?(): string
}

export function parseCidrList(text: string): CidrListResult {
  const blocks = new BlockList()
  const entries: string[] = []
  const trimmed = text.trim()
  if (trimmed.toLowerCase() !== 'none') {
    for (const part of trimmed.split(',')) {
      const entry = part.trim()
      if (entry === '') continue
      const slash = entry.indexOf('/')
      const address = slash < 0 ? entry : entry.slice(0, slash)
      const family = isIP(address)
      if (family === 0) return { ok: false, reason: `expected CIDRs such as 10.0.0.0/8 or ::1/128 ("${entry}" is not one)` }
      const max = family === 4 ? 32 : 128
      const prefixText = slash < 0 ? String(max) : entry.slice(slash + 1)
      const prefix = /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : NaN
      if (!(prefix >= 0 && prefix <= max)) return { ok: false, reason: `the prefix length in "${entry}" must be 0–${max}` }
      blocks.addSubnet(address, prefix, family === 4 ? 'ipv4' : 'ipv6')
      entries.push(`${address}/${prefix}`)
    }
  }
  return {
    ok: true,
    list: {
      entries,
      toJSON: () => (entries.length === 0 ? 'none' : entries.join(',')),
      has(address) {
        if (address === undefined || entries.length === 0) return false
        const family = isIP(address)
        if (family === 0) return false
        // Dual-stack sockets report IPv4 peers as ::ffff:a.b.c.d; match them as the IPv4 they are.
        const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)
        if (mapped) return blocks.check(mapped[1]!, 'ipv4') || blocks.check(address, 'ipv6')
        return blocks.check(address, family === 4 ? 'ipv4' : 'ipv6')
      },
    },
  }
}
