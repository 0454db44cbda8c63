/**
 * A CIDR list from the configuration, as the parts use it.
 * @module
 */
import { parseCidrList, type AddressList } from '../config/cidr.js'

const NOBODY: AddressList = { entries: [], has: () => false }

/** The configuration was validated at load, so the list parses; were it not to, nobody matches. */
export function addressListOf(text: string): AddressList {
  const parsed = parseCidrList(text)
  return parsed.ok ? parsed.list : NOBODY
}
