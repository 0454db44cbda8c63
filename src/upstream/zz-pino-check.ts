import { pino } from 'pino'
import { createHttpClient } from './http-client.js'
createHttpClient({ baseUrl: 'http://x', connections: 1, timeoutMs: 1, retries: 0, maxBodyBytes: 1, logger: pino() })
