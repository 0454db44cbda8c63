/**
 * Copies a JSON object with only some of its members, keeping every kept member's bytes as the
 * CMS wrote them: the object is re-laid in DRF's layout (4 spaces an indentation level), which the
 * members already have at their depth, so nothing inside them is re-serialised. Pure.
 * @module
 */
import type { ObjectNode } from './json-spans.js'

/** Members to keep: `true` keeps a member whole, a nested selection keeps some of its object's members. */
export type MemberSelection = ReadonlyMap<string, true | MemberSelection>

const INDENT = '    '

/**
 * @param text the source the spans point into.
 * @param depth the object's indentation level in the output (0 for a whole body); members keep their bytes only at their own depth.
 */
export function selectMembers(text: string, object: ObjectNode, selection: MemberSelection, depth = 0): string {
  const members: string[] = []
  for (const entry of object.entries) {
    const selected = selection.get(entry.key)
    if (selected === undefined) continue
    if (selected === true || entry.value.kind !== 'object') members.push(text.slice(entry.keyStart, entry.value.end))
    else members.push(text.slice(entry.keyStart, entry.value.start) + selectMembers(text, entry.value, selected, depth + 1))
  }
  if (members.length === 0) return '{}'
  const inner = INDENT.repeat(depth + 1)
  return `{\n${inner}${members.join(`,\n${inner}`)}\n${INDENT.repeat(depth)}}`
}
