import js from '@eslint/js'
import tseslint from 'typescript-eslint'
import layers from './eslint-rules/layer-imports.js'

export default tseslint.config(
  { ignores: ['dist/**', 'dist-demo/**', 'coverage/**', 'node_modules/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // docs/architecture.md, "Layers": imports under src/ only go down.
    files: ['src/**/*.ts'],
    plugins: { layers },
    rules: { 'layers/imports-go-down': 'error' },
  },
)
