import assert from 'node:assert/strict'
import { test } from 'node:test'
import { duplicateNameViolations, maskSecret, missingSecretViolations } from './kyc-connector.rules.ts'

test('a secret is shown as its first four characters and four asterisks', () => {
  assert.equal(maskSecret('a1b2c3d4-e5f6-7890-abcd-ef1234567890'), 'a1b2****')
  assert.equal(maskSecret('🔑🔑🔑🔑🔑🔑🔑🔑'), '🔑🔑🔑🔑****')
  assert.equal(maskSecret('abc'), 'abc****')
})

test('every repeated integration name is a violation at its position', () => {
  assert.deepEqual(duplicateNameViolations([{ name: 'a' }, { name: 'b' }]), [])
  assert.deepEqual(duplicateNameViolations([{ name: 'a' }, { name: 'b' }, { name: 'a' }, { name: 'a' }]), [
    { property: 'integrations[2].name', rule: 'unique' },
    { property: 'integrations[3].name', rule: 'unique' },
  ])
  assert.deepEqual(duplicateNameViolations([{ name: 'a' }, { name: 'A' }]), [], 'names are compared exactly')
})

test('only an integration new to the configuration must bring both secrets', () => {
  const existing = new Set(['kept'])
  assert.deepEqual(missingSecretViolations([{ name: 'kept' }, { name: 'new', apiKey: 'k', sharedSecretKey: 's' }], existing), [])
  assert.deepEqual(missingSecretViolations([{ name: 'kept', apiKey: 'k' }, { name: 'new', apiKey: 'k' }, { name: 'other' }], existing), [
    { property: 'integrations[1].sharedSecretKey', rule: 'required' },
    { property: 'integrations[2].apiKey', rule: 'required' },
    { property: 'integrations[2].sharedSecretKey', rule: 'required' },
  ])
})
