import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'

const root = join(import.meta.dirname, '..')
/** A function longer than this is split: past it, one change touches more than one concern. */
const MAX_LINES = 80

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sourceFiles(path)
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path] : []
  })
}

function isFunction(node: ts.Node): node is ts.FunctionLikeDeclaration {
  return ts.isFunctionDeclaration(node) || ts.isFunctionExpression(node) || ts.isArrowFunction(node) ||
    ts.isMethodDeclaration(node) || ts.isConstructorDeclaration(node) || ts.isGetAccessor(node) || ts.isSetAccessor(node)
}

function nameOf(node: ts.FunctionLikeDeclaration): string {
  if (node.name) return node.name.getText()
  const parent = node.parent
  if ((ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) && parent.name) return parent.name.getText()
  return '(anonymous)'
}

/** `file:line name (N lines)` for every function in `file` longer than `max` lines, nested ones counted in their parent. */
function longFunctions(file: string, max: number): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true)
  const found: string[] = []
  const visit = (node: ts.Node): void => {
    if (isFunction(node)) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1
      const last = source.getLineAndCharacterOfPosition(node.getEnd()).line + 1
      const lines = last - first + 1
      if (lines > max) found.push(`${relative(root, file)}:${first} ${nameOf(node)} (${lines} lines)`)
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return found
}

describe('functions under src/http/', () => {
  it(`are at most ${MAX_LINES} lines long, nested functions counted in their parent`, () => {
    const files = sourceFiles(join(root, 'src', 'http'))
    expect(files.length).toBeGreaterThan(0)
    expect(files.flatMap((file) => longFunctions(file, MAX_LINES))).toEqual([])
  })

  it('are measured from first to last line, so a long one is caught', () => {
    const self = join(root, 'test', 'function-length.test.ts')
    // This file's own functions are short; with a bound of 5 lines the measuring ones are not.
    expect(longFunctions(self, 5).some((line) => line.includes('longFunctions'))).toBe(true)
  })
})
