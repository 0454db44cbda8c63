/**
 * Sums up a V8 heap snapshot (`scripts/memory-census.ts --heap-snapshot`): self size by node type
 * and constructor, the strings that occur most often (the same text held many times), and for the
 * biggest groups who holds them (the constructor and edge name of the first retainer).
 *
 *   npx tsx scripts/heap-summary.ts out.heapsnapshot [--top 30]
 *
 * It reads the snapshot's flat `nodes`/`edges` arrays as `snapshot.meta` describes them; nothing
 * about their layout is assumed beyond that.
 * @module
 */
import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'

interface HeapSnapshot {
  snapshot: {
    meta: {
      node_fields: string[]
      node_types: [string[], ...unknown[]]
      edge_fields: string[]
      edge_types: [string[], ...unknown[]]
    }
  }
  nodes: number[]
  edges: number[]
  strings: string[]
}

interface Group {
  count: number
  size: number
}

const { values, positionals } = parseArgs({ allowPositionals: true, options: { top: { type: 'string', default: '30' } } })
const top = Number(values.top)
const file = positionals[0]
if (file === undefined) throw new Error('usage: heap-summary.ts <file.heapsnapshot> [--top N]')
const heap = JSON.parse(readFileSync(file, 'utf8')) as HeapSnapshot
const { meta } = heap.snapshot
const nodeWidth = meta.node_fields.length
const edgeWidth = meta.edge_fields.length
const field = (name: string, fields: string[]): number => fields.indexOf(name)
const N_TYPE = field('type', meta.node_fields)
const N_NAME = field('name', meta.node_fields)
const N_SIZE = field('self_size', meta.node_fields)
const N_EDGES = field('edge_count', meta.node_fields)
const E_TYPE = field('type', meta.edge_fields)
const E_NAME = field('name_or_index', meta.edge_fields)
const E_TO = field('to_node', meta.edge_fields)
const nodeTypes = meta.node_types[0]
const edgeTypes = meta.edge_types[0]
const nodeCount = heap.nodes.length / nodeWidth

/** What a node is called in the summary: its type, and for objects its constructor. */
function label(node: number): string {
  const type = nodeTypes[heap.nodes[node * nodeWidth + N_TYPE]!]!
  const name = heap.strings[heap.nodes[node * nodeWidth + N_NAME]!]!
  if (type === 'object' || type === 'native' || type === 'closure' || type === 'hidden' || type === 'code') return `${type} ${name.slice(0, 60)}`
  if (type === 'array') return `array ${name.slice(0, 40)}`
  return type
}

// The first retainer of every node (enough to say who holds a group of many alike).
const firstRetainer = new Int32Array(nodeCount).fill(-1)
const firstRetainerEdge = new Array<string>(nodeCount)
let edgeAt = 0
for (let node = 0; node < nodeCount; node++) {
  const edges = heap.nodes[node * nodeWidth + N_EDGES]!
  for (let e = 0; e < edges; e++, edgeAt += edgeWidth) {
    const to = heap.edges[edgeAt + E_TO]! / nodeWidth
    const edgeType = edgeTypes[heap.edges[edgeAt + E_TYPE]!]!
    if (edgeType === 'weak' || firstRetainer[to] !== -1) continue
    firstRetainer[to] = node
    const name = heap.edges[edgeAt + E_NAME]!
    firstRetainerEdge[to] = edgeType === 'element' || edgeType === 'hidden' ? `[${edgeType}]` : String(heap.strings[name])
  }
}

const groups = new Map<string, Group>()
const heldBy = new Map<string, Map<string, Group>>()
const strings = new Map<string, Group>()
let total = 0
for (let node = 0; node < nodeCount; node++) {
  const size = heap.nodes[node * nodeWidth + N_SIZE]!
  total += size
  const name = label(node)
  const group = groups.get(name) ?? { count: 0, size: 0 }
  group.count++
  group.size += size
  groups.set(name, group)
  const holder = firstRetainer[node]!
  const by = holder === -1 ? '(none)' : `${label(holder)} .${firstRetainerEdge[node]}`
  const holders = heldBy.get(name) ?? new Map<string, Group>()
  const held = holders.get(by) ?? { count: 0, size: 0 }
  held.count++
  held.size += size
  holders.set(by, held)
  heldBy.set(name, holders)
  const type = nodeTypes[heap.nodes[node * nodeWidth + N_TYPE]!]
  if (type === 'string' || type === 'concatenated string' || type === 'sliced string') {
    const text = heap.strings[heap.nodes[node * nodeWidth + N_NAME]!]!
    const key = text.length > 80 ? `${text.slice(0, 80)}… (${text.length})` : text
    const same = strings.get(key) ?? { count: 0, size: 0 }
    same.count++
    same.size += size
    strings.set(key, same)
  }
}

const mb = (bytes: number): string => `${(bytes / 1e6).toFixed(1)} MB`
const sorted = (map: Map<string, Group>): [string, Group][] => [...map].sort((a, b) => b[1].size - a[1].size)
process.stdout.write(`${nodeCount} nodes, ${mb(total)} self size in all\n\nBy type and constructor:\n`)
for (const [name, group] of sorted(groups).slice(0, top)) {
  process.stdout.write(`  ${mb(group.size).padStart(9)}  ${String(group.count).padStart(9)}  ${name}\n`)
  for (const [by, held] of sorted(heldBy.get(name)!).slice(0, 3)) {
    process.stdout.write(`             ${mb(held.size).padStart(9)} ${String(held.count).padStart(9)}  held by ${by}\n`)
  }
}
process.stdout.write('\nStrings held more than once, by bytes:\n')
for (const [text, group] of sorted(new Map([...strings].filter(([, g]) => g.count > 1))).slice(0, top)) {
  process.stdout.write(`  ${mb(group.size).padStart(9)}  ${String(group.count).padStart(9)}  ${JSON.stringify(text)}\n`)
}
