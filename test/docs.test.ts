/**
 * The full configuration table in docs/configuration.md is generated from the schema: this fails
 * when they drift (fix with `npm run docs:config`). The README keeps a short hand-written table of
 * the settings that matter; every variable it names must exist, and it links to the full table.
 */
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { CONFIG_DOC, renderConfigTable, TABLE_END, TABLE_START } from '../src/config/config-docs.js'
import { variables } from '../src/config/schema.js'

const read = (path: string) => readFileSync(new URL(`../${path}`, import.meta.url), 'utf8')

describe(CONFIG_DOC, () => {
  it('documents every configuration variable exactly as the schema does', () => {
    const doc = read(CONFIG_DOC)
    const start = doc.indexOf(TABLE_START)
    const end = doc.indexOf(TABLE_END)
    expect(start).toBeGreaterThanOrEqual(0)
    expect(end).toBeGreaterThan(start)
    expect(doc.slice(start + TABLE_START.length, end).trim()).toBe(renderConfigTable().trim())
  })
})

describe('README', () => {
  it('names the test command CI runs', () => {
    expect(read('README.md')).toContain('npm test')
  })

  it('links to the full configuration table and keeps no generated copy of it', () => {
    const readme = read('README.md')
    expect(readme).toContain(`(${CONFIG_DOC})`)
    expect(readme).not.toContain(TABLE_START)
  })

  it('names only variables the schema reads in its settings table', () => {
    const readme = read('README.md')
    const known = new Set(variables().map(([, variable]) => variable.name))
    const section = readme.split('\n## Settings that matter')[1]?.split('\n## ')[0] ?? ''
    expect(section).not.toBe('')
    const named = [...section.matchAll(/^\| `([A-Z][A-Z0-9_]+)`/gm)].map((match) => match[1])
    expect(named.length).toBeGreaterThan(0)
    for (const name of named) expect(known, name).toContain(name)
  })
})
