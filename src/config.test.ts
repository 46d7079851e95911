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

test('worker settings have defaults and refuse values out of range', () => {
  const config = loadConfig(base)
  assert.deepEqual([config.workerPollIntervalMs, config.workerConcurrency, config.workerLeaseMs], [250, 4, 60_000])
  const set = loadConfig({ ...base, WORKER_POLL_INTERVAL_MS: '50', WORKER_CONCURRENCY: '16', WORKER_LEASE_MS: '5000' })
  assert.deepEqual([set.workerPollIntervalMs, set.workerConcurrency, set.workerLeaseMs], [50, 16, 5000])
  for (const [name, value] of [['WORKER_POLL_INTERVAL_MS', '5'], ['WORKER_CONCURRENCY', '0'], ['WORKER_CONCURRENCY', 'many'], ['WORKER_LEASE_MS', '999']]) {
    assert.throws(
      () => loadConfig({ ...base, [name!]: value }),
      (error: unknown) => error instanceof ConfigError && error.problems.some((p) => p.startsWith(name!)),
      `${name}=${value}`,
    )
  }
})

test('SEALING_KEY_PREVIOUS: a 32-byte key, only beside SEALING_KEY, and not the same key', () => {
  const key = (byte: number) => Buffer.alloc(32, byte).toString('base64')
  assert.equal(loadConfig({ ...base, SEALING_KEY: key(1), SEALING_KEY_PREVIOUS: key(2) }).sealingKeyPrevious, key(2))
  for (const env of [
    { SEALING_KEY: key(1), SEALING_KEY_PREVIOUS: 'too-short' },
    { SEALING_KEY_PREVIOUS: key(2) },
    { SEALING_KEY: key(1), SEALING_KEY_PREVIOUS: key(1) },
  ]) {
    assert.throws(
      () => loadConfig({ ...base, ...env }),
      (error: unknown) => error instanceof ConfigError && error.problems.some((p) => p.startsWith('SEALING_KEY_PREVIOUS')),
      JSON.stringify(env),
    )
  }
})
