/**
 * Copies a JSON object with only some of its members, keeping every kept member's bytes as the
 * CMS wrote them: the object is re-laid in DRF's layout (4 spaces an indentation level). A member
 * copied at its own depth keeps its bytes; one copied deeper (a detail's members in a listing's
 * item) gets the deeper indentation on each of its lines, which JSON's strings never span. Pure.
 * @module
 */
import type { ObjectNode } from './json-spans.js'
import { jsonString } from './json-text.js'

/**
 * Members to keep: `true` keeps a member whole, a nested selection keeps some of its object's
 * members, `{ raw }` puts another source's value text in the member's place, or after the
 * object's own members when it has none of that name.
 */
export type MemberSelection = ReadonlyMap<string, true | { readonly raw: string } | MemberSelection>

const INDENT = '    '

/**
 * @param text the source the spans point into.
 * @param depth the object's indentation level in the output (0 for a whole body).
 * @param shift how many more spaces each copied line needs than it has in `text`.
 */
export function selectMembers(text: string, object: ObjectNode, selection: MemberSelection, depth = 0, shift = 0): string {
  const indented = (copied: string) => (shift === 0 ? copied : copied.replaceAll('\n', `\n${' '.repeat(shift)}`))
  const members: string[] = []
  for (const entry of object.entries) {
    const selected = selection.get(entry.key)
    if (selected === undefined) continue
    const key = text.slice(entry.keyStart, entry.value.start)
    if (selected === true || (selected instanceof Map && entry.value.kind !== 'object')) members.push(indented(text.slice(entry.keyStart, entry.value.end)))
    else if (selected instanceof Map && entry.value.kind === 'object') members.push(key + selectMembers(text, entry.value, selected, depth + 1, shift))
    else members.push(key + (selected as { readonly raw: string }).raw)
  }
  if (selection.size > members.length) {
    const own = new Set(object.entries.map((entry) => entry.key))
    for (const [name, selected] of selection) {
      if (!own.has(name) && typeof selected === 'object' && 'raw' in selected) members.push(`${jsonString(name)}: ${selected.raw}`)
    }
  }
  if (members.length === 0) return '{}'
  const inner = INDENT.repeat(depth + 1)
  return `{\n${inner}${members.join(`,\n${inner}`)}\n${INDENT.repeat(depth)}}`
}
