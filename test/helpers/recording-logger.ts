/**
 * A logger for a module under test (the `LogSink` levels it asks for): keeps each line as
 * `<level> <message>`, so a test asserts what was logged, and how often, in one comparison.
 */
export function recordingLogger() {
  const lines: string[] = []
  return {
    lines,
    info: (_details: object, message: string) => void lines.push(`info ${message}`),
    warn: (_details: object, message: string) => void lines.push(`warn ${message}`),
  }
}
