/**
 * The logging every module takes as a dependency: pino's call shape (`details`, then `message`),
 * so the app passes its Fastify logger and tests pass a recorder. Modules ask for the levels they
 * use with `Pick<LogSink, 'info' | 'warn'>`, one type instead of a look-alike per module.
 * @module
 */
export type LogMethod = (details: object, message: string) => void

export interface LogSink {
  readonly debug: LogMethod
  readonly info: LogMethod
  readonly warn: LogMethod
  readonly error: LogMethod
}
