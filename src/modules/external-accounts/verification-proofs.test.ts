import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { SIGNATURE_LIMITS } from '../../lib/signatures/index.ts'
import { SELF_DECLARATION_SCHEMA, selfDeclarationViolations, signedMessageViolations, signingMessage } from './verification-proofs.ts'

const schema = structuredClone(SELF_DECLARATION_SCHEMA) as object
const DECLARATION = { isVASP: false, isSelfHostedWallet: true, isSelfOwnedCryptoAddress: true }

describe('verification proofs', () => {
  test('the self-declaration schema cannot be changed by whoever holds it', () => {
    assert.throws(() => {
      ;(SELF_DECLARATION_SCHEMA.required as unknown as string[]).push('x')
    }, TypeError)
    assert.throws(() => {
      ;(SELF_DECLARATION_SCHEMA.properties.isVASP as { type: string }).type = 'string'
    }, TypeError)
  })

  test('every combination of the three booleans is a declaration, except a service provider\'s self-hosted wallet', () => {
    for (const isVASP of [true, false]) {
      for (const isSelfHostedWallet of [true, false]) {
        for (const isSelfOwnedCryptoAddress of [true, false]) {
          const violations = selfDeclarationViolations(schema, { isVASP, isSelfHostedWallet, isSelfOwnedCryptoAddress })
          if (isVASP && isSelfHostedWallet) assert.deepEqual(violations, [{ property: 'proof.isSelfHostedWallet', rule: 'const', ruleParams: { allowedValue: false } }])
          else assert.deepEqual(violations, [])
        }
      }
    }
  })

  test('violations are named from the request body', () => {
    assert.deepEqual(selfDeclarationViolations(schema, { ...DECLARATION, isVASP: 'no' }), [{ property: 'proof.isVASP', rule: 'type', ruleParams: { type: 'boolean' } }])
    assert.deepEqual(selfDeclarationViolations(schema, { ...DECLARATION, extra: 1 }), [{ property: 'proof.extra', rule: 'additionalProperties' }])
    assert.deepEqual(selfDeclarationViolations(schema, []), [{ property: 'proof', rule: 'type', ruleParams: { type: 'object' } }])
    assert.deepEqual(
      selfDeclarationViolations(schema, {}).map((v) => v.property),
      ['proof.isVASP', 'proof.isSelfHostedWallet', 'proof.isSelfOwnedCryptoAddress'],
    )
  })

  test('the schema enforced is the one given: a stored schema that differs is the one that counts', () => {
    const older = { type: 'object', properties: { isVASP: { type: 'boolean' } }, required: ['isVASP'] }
    assert.deepEqual(selfDeclarationViolations(older, { isVASP: true }), [])
    assert.deepEqual(selfDeclarationViolations(schema, { isVASP: true }).map((v) => v.rule), ['required', 'required'])
  })

  test('a signed message: a signature, and a public key where one is given', () => {
    assert.deepEqual(signedMessageViolations({ signature: 'abc' }), [])
    assert.deepEqual(signedMessageViolations({ signature: 'abc', publicKey: '02ab' }), [])
    assert.deepEqual(signedMessageViolations({}), [{ property: 'proof.signature', rule: 'required' }])
    assert.deepEqual(signedMessageViolations({ signature: '' }), [{ property: 'proof.signature', rule: 'minLength', ruleParams: { limit: 1 } }])
    assert.deepEqual(signedMessageViolations({ signature: 'x'.repeat(SIGNATURE_LIMITS.signature + 1) }), [{ property: 'proof.signature', rule: 'maxLength', ruleParams: { limit: SIGNATURE_LIMITS.signature } }])
    assert.deepEqual(signedMessageViolations({ signature: 'abc', ...DECLARATION }).map((v) => v.rule), ['additionalProperties', 'additionalProperties', 'additionalProperties'])
  })

  test('the message names the network, the address and the nonce, on lines of their own, and nothing else varies', () => {
    const message = signingMessage({ network: 'bitcoin', address: 'tb1qxsy3qh8d44d5jkuvn98rxsjtxpmdlslg8d92cv', nonce: '00112233445566778899aabbccddeeff' })
    assert.equal(
      message,
      [
        'Crypto address verification',
        '',
        'I confirm that I control the address below and hold the key that signs for it.',
        'Signing this message proves control of the address only: it authorizes no transaction.',
        '',
        'Network: bitcoin',
        'Address: tb1qxsy3qh8d44d5jkuvn98rxsjtxpmdlslg8d92cv',
        'Nonce: 00112233445566778899aabbccddeeff',
      ].join('\n'),
    )
    assert.notEqual(signingMessage({ network: 'bitcoin', address: 'a', nonce: '1' }), signingMessage({ network: 'bitcoin', address: 'a', nonce: '2' }))
  })
})
