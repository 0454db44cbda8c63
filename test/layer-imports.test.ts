import { join } from 'node:path'
import { ESLint } from 'eslint'
import { describe, expect, it } from 'vitest'

const root = join(import.meta.dirname, '..')
const eslint = new ESLint({ cwd: root })

/** The layer rule's messages for `code` as if it were the file `file` (relative to the root). */
async function layerMessages(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: join(root, file) })
  return (result?.messages ?? []).filter((m) => m.ruleId === 'layers/imports-go-down').map((m) => m.message)
}

describe('the layer rule (docs/architecture.md#layers-and-folders)', () => {
  it('lets a module import from its own layer and from the layers below', async () => {
    expect(await layerMessages('src/http/example.ts', "import { a } from '../cache/read-through.js'\nimport { b } from './answers.js'\nimport { c } from '../errors.js'\nexport { a, b, c }\n")).toEqual([])
    expect(await layerMessages('src/cache/budget/example.ts', "import type { R } from '../stores/redis-client.js'\nexport type { R }\n")).toEqual([])
  })

  it('reports an import that goes up, naming both layers', async () => {
    const messages = await layerMessages('src/tree/example.ts', "import { serve } from '../http/serve.js'\nexport { serve }\n")
    expect(messages).toHaveLength(1)
    expect(messages[0]).toContain('src/tree/example.ts (tree) imports src/http/serve.js (http)')
  })

  it('counts type-only imports and re-exports too', async () => {
    expect(await layerMessages('src/query/example.ts', "import type { X } from '../sync/sync-service.js'\nexport type { X }\n")).toHaveLength(1)
    expect(await layerMessages('src/upstream/example.ts', "export * from '../cache/read-through.js'\n")).toHaveLength(1)
  })

  it('reports a folder the layer table does not place', async () => {
    const messages = await layerMessages('src/http/example.ts', "import { x } from '../somewhere-new/x.js'\nexport { x }\n")
    expect(messages).toEqual([expect.stringContaining('somewhere-new is not in the layer table')])
  })

  it('leaves tests and code outside src/ alone', async () => {
    expect(await layerMessages('src/tree/example.test.ts', "import { serve } from '../http/serve.js'\nexport { serve }\n")).toEqual([])
    expect(await layerMessages('bench/example.ts', "import { serve } from '../src/http/serve.js'\nexport { serve }\n")).toEqual([])
  })
})
