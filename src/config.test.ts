import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ConfigError, loadConfig } from './config.ts'

const base = { DATA_DIR: ':memory:' }

test('KYC_CONNECTOR_PROVIDERS defaults to veriff and takes a comma-separated list', () => {
  assert.deepEqual(loadConfig(base).kycConnectorProviders, ['veriff'])
  assert.deepEqual(loadConfig({ ...base, KYC_CONNECTOR_PROVIDERS: 'veriff, sumsub,onfido-2' }).kycConnectorProviders, ['veriff', 'sumsub', 'onfido-2'])
})

test('KYC_CONNECTOR_PROVIDERS refuses names that cannot be a path segment and a scope part, and repeats', () => {
  for (const value of ['Veriff', 'veriff,', 'ver.iff', 'ver iff', '-veriff', '1veriff', 'a'.repeat(33), 'veriff,veriff']) {
    assert.throws(
      () => loadConfig({ ...base, KYC_CONNECTOR_PROVIDERS: value }),
      (error: unknown) => error instanceof ConfigError && error.problems.some((p) => p.startsWith('KYC_CONNECTOR_PROVIDERS')),
      value,
    )
  }
})
