import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    // Integration suites start real servers on 127.0.0.1:0; a generous timeout
    // covers a loaded 2-core CI machine without hiding hangs.
    testTimeout: 20_000,
    hookTimeout: 20_000,
    // In CI the JSON report feeds .ci/run's "N passed, N failed" line.
    reporters: process.env.CI ? ['default', ['json', { outputFile: '.vitest-report.json' }]] : ['default'],
    coverage: {
      provider: 'v8',
      include: ['src/**/*.ts'],
      exclude: ['src/**/*.test.ts', 'src/**/*.test-helper.ts', 'src/main.ts'],
    },
  },
})
