/**
 * Process entry: read the configuration, build the app, listen, and close gracefully on SIGTERM/SIGINT.
 * @module
 */
import closeWithGrace from 'close-with-grace'
import { buildApp } from './app.js'
import { isProxyError } from './errors.js'
import { describeConfig, loadConfig } from './config/load-config.js'

async function main(): Promise<void> {
  let config
  try {
    config = loadConfig(process.env)
  } catch (error) {
    if (isProxyError(error, 'CONFIG_INVALID')) {
      process.stderr.write(`cms-shield: invalid configuration\n${error.message}\n`)
      process.exit(2)
    }
    throw error
  }
  const app = await buildApp(config)
  app.log.info({ config: describeConfig(config) }, 'starting')
  // On SIGTERM/SIGINT: stop accepting, let requests in flight finish, stop the sync, release the
  // lease, close Redis (app.close runs every onClose hook), then exit 0; exit 1 if that takes
  // longer than SHUTDOWN_TIMEOUT, or on an uncaught error.
  closeWithGrace({ delay: config.shutdownTimeoutMs, logger: { error: (message: unknown) => app.log.error({ detail: message }, 'shutdown') } }, async ({ signal, err }) => {
    if (err) app.log.error({ err }, 'shutting down after an uncaught error')
    else app.log.info({ signal, timeoutMs: config.shutdownTimeoutMs }, 'shutting down')
    await app.close()
    app.log.info({}, 'shut down')
  })
  await app.listen({ port: config.port, host: config.host })
}

main().catch((error: unknown) => {
  process.stderr.write(`cms-shield: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
  process.exit(1)
})
