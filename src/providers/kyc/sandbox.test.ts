import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { SandboxKycProvider } from './sandbox.ts'

describe('sandbox KYC provider', () => {
  const provider = new SandboxKycProvider()
  const person = { givenName: 'John', familyName: 'Doe', birthdate: '1987-01-01', citizenship: 'GB' }
  const address = { country: 'GB', city: 'Manchester', line1: '1 High Street', postalCode: 'M4 1AA' }

  test('identity: approved unless the family name is Rejected; the same person reads the same document', async () => {
    const first = await provider.checkIdentity({ submission: 'document-submission', person, files: [] })
    assert.equal(first.approved, true)
    assert.deepEqual(await provider.checkIdentity({ submission: 'document-submission', person, files: [] }), first)
    assert.equal(first.document?.country, 'GB')
    assert.deepEqual(await provider.checkIdentity({ submission: 'document-submission', person: { ...person, familyName: ' rejected ' }, files: [] }), {
      approved: false,
      reason: 'provider-verification-rejected',
      providerReasons: ['document-unreadable'],
    })
    assert.deepEqual(await provider.checkIdentity({ submission: 'electronic-verification', person: { ...person, familyName: 'Rejected' }, files: [] }), {
      approved: false,
      reason: 'data-mismatch',
    })
  })

  test('proof of address: approved unless the first line is 1 Rejected Street', async () => {
    assert.equal((await provider.checkProofOfAddress({ submission: 'electronic-verification', person: { ...person, address }, files: [] })).approved, true)
    const rejected = await provider.checkProofOfAddress({ submission: 'document-submission', person: { ...person, address: { ...address, line1: '1 Rejected Street' } }, files: [] })
    assert.deepEqual(rejected, { approved: false, reason: 'address-mismatch' })
  })

  test('screening: rejects the family name Sanctioned', async () => {
    assert.deepEqual(await provider.screen(person), { approved: true })
    assert.deepEqual(await provider.screen({ ...person, familyName: 'Sanctioned' }), { approved: false })
  })
})
