/**
 * Process entry: read the configuration, build the app, listen, and close cleanly on SIGTERM/SIGINT.
 * @module
 */
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
  let closing = false
  const close = (signal: string) => {
    if (closing) return
    closing = true
    app.log.info({ signal }, 'shutting down')
    app.close().then(
      () => process.exit(0),
      (error: unknown) => {
        app.log.error({ err: error }, 'shutdown failed')
        process.exit(1)
      },
    )
  }
  process.once('SIGTERM', () => close('SIGTERM'))
  process.once('SIGINT', () => close('SIGINT'))
  await app.listen({ port: config.port, host: config.host })
}

main().catch((error: unknown) => {
  process.stderr.write(`cms-shield: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
  process.exit(1)
})
