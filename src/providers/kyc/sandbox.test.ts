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
    // A rejected document is read all the same: the reference's output of a document submission always has one.
    const rejected = await provider.checkIdentity({ submission: 'document-submission', person: { ...person, familyName: ' rejected ' }, files: [] })
    assert.deepEqual({ ...rejected, document: undefined }, {
      approved: false,
      reason: 'provider-verification-rejected',
      providerReasons: ['document-rejected'],
      document: undefined,
      person: { ...person, familyName: ' rejected ' },
    })
    assert.equal(rejected.document?.type, 'passport')
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

  test('test phone numbers: the documented fictional ranges of their country only', () => {
    for (const [number, country] of [['+447700900000', 'GB'], ['+447700900999', 'GB'], ['+12015550100', 'US'], ['+14155550199', 'US'], ['+33639980000', 'FR'], ['+33639989999', 'FR']]) {
      assert.equal(provider.isTestPhoneNumber(number!, country!), true, number)
    }
    for (const [number, country] of [['+447700900000', 'FR'], ['+447700901000', 'GB'], ['+447400123456', 'GB'], ['+12015550200', 'US'], ['+11015550100', 'US'], ['+33639990000', 'FR']]) {
      assert.equal(provider.isTestPhoneNumber(number!, country!), false, number)
    }
  })

  test('screening: rejects the family name Sanctioned', async () => {
    assert.deepEqual(await provider.screen(person), { approved: true })
    assert.deepEqual(await provider.screen({ ...person, familyName: 'Sanctioned' }), { approved: false })
  })
})
