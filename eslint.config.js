// @ts-check
import path from 'node:path'
import js from '@eslint/js'
import tseslint from 'typescript-eslint'

const MODULES = path.join(import.meta.dirname, 'src', 'modules')

/** The module a file of src/modules belongs to; undefined for a file elsewhere. */
function moduleOf(/** @type {string} */ file) {
  const relative = path.relative(MODULES, file)
  return relative.startsWith('..') || path.isAbsolute(relative) ? undefined : relative.split(path.sep)[0]
}

/**
 * Module boundaries (docs/architecture.md): another module is reached through its entry file, index.ts, never
 * through its internals; a repository (`*.repository.ts`) is imported only beside it, by its own module (or by
 * src/http, src/jobs, src/flows for theirs), and no entry file passes one on.
 * @type {import('eslint').Rule.RuleModule}
 */
const moduleBoundaries = {
  meta: {
    type: 'problem',
    schema: [],
    messages: {
      internal: "Import module '{{module}}' through its entry file ({{entry}}), not its internals",
      repository: "'{{file}}' belongs to the module beside it: use that module's services instead",
    },
  },
  create(context) {
    const importer = context.filename
    const check = (/** @type {{ source?: import('estree').Node | null }} */ node) => {
      const specifier = node.source?.type === 'Literal' ? node.source.value : undefined
      if (typeof specifier !== 'string' || !specifier.startsWith('.')) return
      const target = path.resolve(path.dirname(importer), specifier)
      const source = /** @type {import('estree').Node} */ (node.source)
      if (target.endsWith('.repository.ts') && (path.dirname(target) !== path.dirname(importer) || path.basename(importer) === 'index.ts')) {
        context.report({ node: source, messageId: 'repository', data: { file: path.basename(target) } })
        return
      }
      const targetModule = moduleOf(target)
      if (targetModule !== undefined && targetModule !== moduleOf(importer) && path.relative(path.join(MODULES, targetModule), target) !== 'index.ts') {
        context.report({ node: source, messageId: 'internal', data: { module: targetModule, entry: path.relative(path.dirname(importer), path.join(MODULES, targetModule, 'index.ts')) } })
      }
    }
    return { ImportDeclaration: check, ExportNamedDeclaration: check, ExportAllDeclaration: check, ImportExpression: check }
  },
}

export default tseslint.config(
  { ignores: ['node_modules/**', 'data/**', 'bench/results/**', 'test/.artifacts/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { parserOptions: { projectService: { allowDefaultProject: ['eslint.config.js', 'scripts/*.mjs'] }, tsconfigRootDir: import.meta.dirname } },
    rules: {
      // node:test's test() and describe() return promises that the runner itself awaits.
      '@typescript-eslint/no-floating-promises': [
        'error',
        { allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['test', 'describe', 'it', 'suite'] }] },
      ],
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-properties': ['error', { object: 'process', property: 'env', message: 'Read configuration through src/config.ts' }],
    },
  },
  {
    // Tests (beside the code or in test/), benchmarks and scripts may reach into any module.
    files: ['src/**/*.ts'],
    ignores: ['src/**/*.test.ts'],
    plugins: { tessera: { rules: { 'module-boundaries': moduleBoundaries } } },
    rules: { 'tessera/module-boundaries': 'error' },
  },
  {
    files: ['src/config.ts', 'test/**', 'bench/**', 'scripts/**'],
    rules: { 'no-restricted-properties': 'off' },
  },
  {
    // node:test's describe() and test() return promises the runner itself awaits.
    files: ['**/*.test.ts'],
    rules: { '@typescript-eslint/no-floating-promises': 'off' },
  },
)
