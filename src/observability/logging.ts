/**
 * Logging: pino, one JSON object per line (or pino-pretty with LOG_PRETTY), one line per request
 * carrying its request id, and secrets never written. Redaction is by path, as pino does it, so a
 * header or setting holding a secret is replaced wherever a log call passes it; describeConfig
 * already leaves secret variables out of the start-up line.
 * @module
 */
import { levels, type LoggerOptions } from 'pino'
import type { Config } from '../config/load-config.js'

/** Paths pino replaces with `[redacted]`, wherever a header object or a setting is logged. */
export const REDACTED_PATHS: readonly string[] = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-purge-token"]',
  'headers.authorization',
  'headers.cookie',
  'headers["x-purge-token"]',
  'headers["fastly-key"]',
  'res.headers["set-cookie"]',
  'config.redisPassword',
  'config.purgeToken',
  'config.refreshToken',
  'config.fastlyApiToken',
  'config.cloudflareApiToken',
  'password',
  '*.password',
]

export function loggerOptions(config: Pick<Config, 'logLevel' | 'logPretty'>): LoggerOptions {
  return {
    level: config.logLevel,
    redact: { paths: [...REDACTED_PATHS], censor: '[redacted]' },
    ...(config.logPretty
      ? { transport: { target: 'pino-pretty', options: { ignore: 'pid,hostname', translateTime: 'HH:MM:ss.l' } } }
      : {}),
  }
}

/**
 * Whether a logger set to `level` writes lines at `wanted` (`silent` writes none), from pino's
 * own level table: a check that allocates nothing, for the request path.
 */
export function writesAt(level: string, wanted: 'info' | 'debug'): boolean {
  const value = levels.values[level]
  return value !== undefined && value <= levels.values[wanted]!
}
