/**
 * The README's configuration table is generated from the schema: this fails when they drift
 * (fix with `npm run docs:config`).
 */
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { renderConfigTable, TABLE_END, TABLE_START } from '../src/config/config-docs.js'

describe('README', () => {
  it('documents every configuration variable exactly as the schema does', () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')
    const start = readme.indexOf(TABLE_START)
    const end = readme.indexOf(TABLE_END)
    expect(start).toBeGreaterThanOrEqual(0)
    expect(readme.slice(start + TABLE_START.length, end).trim()).toBe(renderConfigTable().trim())
  })

  it('names the test command CI runs', () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')
    expect(readme).toContain('npm test')
  })
})
