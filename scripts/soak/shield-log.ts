/**
 * What cms-shield itself complained about during the soak: it runs with LOG_LEVEL=warn, so its log
 * holds only warnings and errors (pino JSON lines: level 40 and up). They are counted by message,
 * error code and the error's text with numbers blanked (so "page 586 changed …" and "page 817
 * changed …" are one kind), with one full example of each.
 * @module
 */
import { readFileSync } from 'node:fs'

export interface LogKind {
  /** `sync: failed; … — SYNC_INCONSISTENT: page # changed between its listing and its detail` */
  kind: string
  count: number
  example: string
}

interface PinoLine {
  level?: number
  msg?: string
  code?: string
  err?: { message?: string }
}

export function summarizeShieldLog(file: string): LogKind[] {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch {
    return []
  }
  const kinds = new Map<string, LogKind>()
  for (const line of text.split('\n')) {
    if (!line.startsWith('{')) continue
    let entry: PinoLine
    try {
      entry = JSON.parse(line) as PinoLine
    } catch {
      continue
    }
    if ((entry.level ?? 0) < 40) continue
    const detail = [entry.code, entry.err?.message?.replace(/\d+/g, '#')].filter((part) => part !== undefined).join(': ')
    const kind = `${entry.msg ?? '(no message)'}${detail === '' ? '' : ` — ${detail}`}`
    const known = kinds.get(kind)
    if (known) known.count++
    else kinds.set(kind, { kind, count: 1, example: line.length > 600 ? `${line.slice(0, 600)}…` : line })
  }
  return [...kinds.values()].sort((a, b) => b.count - a.count)
}
