/**
 * `layers/imports-go-down`: a module under `src/` may import only from its own layer or from a
 * layer below it, in the order of docs/architecture.md#layers-and-folders. The table is the one place that
 * order is written down; a folder missing from it is itself an error, so a new folder must be
 * placed in the order before it can be used.
 *
 * Tests and test helpers are left out: an integration test legitimately reaches across layers.
 */
import path from 'node:path'

/** Lowest first. A path is matched by its first segment under `src/` (a folder, or a top-level file). */
export const LAYERS = [
  ['foundation', ['errors.ts', 'timers.ts', 'backoff.ts', 'deadline.ts', 'config', 'json']],
  ['observability', ['observability']],
  ['upstream', ['upstream']],
  ['tree', ['tree']],
  ['query', ['query']],
  ['sync', ['sync']],
  ['persist', ['persist']],
  ['cache', ['cache']],
  ['cluster', ['cluster']],
  ['cdn', ['cdn']],
  ['http', ['http']],
  ['composition', ['compose', 'app.ts', 'main.ts']],
]

const rankOf = new Map(LAYERS.flatMap(([, entries], rank) => entries.map((entry) => [entry, rank])))

function isTestFile(file) {
  return /\.test(-helper)?\.ts$/.test(file)
}

/** The layer of a file under `src/`, `undefined` outside `src/`, `null` when the table lacks it. */
function layerOf(srcDir, file) {
  const relative = path.relative(srcDir, file)
  if (relative.startsWith('..') || path.isAbsolute(relative)) return undefined
  const first = relative.split(path.sep)[0]
  const entry = rankOf.has(first) ? first : first.replace(/\.js$/, '.ts')
  return rankOf.has(entry) ? { entry: first, rank: rankOf.get(entry) } : null
}

const rule = {
  meta: {
    type: 'problem',
    docs: { description: 'imports under src/ only go down the layers of docs/architecture.md' },
    schema: [],
    messages: {
      upward: "{{from}} ({{fromLayer}}) imports {{target}} ({{toLayer}}): imports only go down the layers (docs/architecture.md#layers-and-folders)",
      unplaced: '{{entry}} is not in the layer table of eslint-rules/layer-imports.js: place it before importing across it',
    },
  },
  create(context) {
    const file = context.filename
    const srcDir = path.join(context.cwd, 'src')
    if (isTestFile(file)) return {}
    const from = layerOf(srcDir, file)
    if (from === undefined) return {}
    function check(node) {
      const source = node.source
      if (!source || typeof source.value !== 'string' || !source.value.startsWith('.')) return
      const target = path.resolve(path.dirname(file), source.value)
      const to = layerOf(srcDir, target)
      if (to === undefined) return
      if (from === null || to === null) {
        const entry = from === null ? path.relative(srcDir, file).split(path.sep)[0] : to === null ? path.relative(srcDir, target).split(path.sep)[0] : ''
        context.report({ node: source, messageId: 'unplaced', data: { entry } })
        return
      }
      if (to.rank > from.rank) {
        context.report({
          node: source,
          messageId: 'upward',
          data: {
            from: path.relative(context.cwd, file),
            fromLayer: LAYERS[from.rank][0],
            target: path.relative(context.cwd, target),
            toLayer: LAYERS[to.rank][0],
          },
        })
      }
    }
    return {
      ImportDeclaration: check,
      ExportNamedDeclaration: check,
      ExportAllDeclaration: check,
      ImportExpression: check,
    }
  },
}

export default { rules: { 'imports-go-down': rule } }
