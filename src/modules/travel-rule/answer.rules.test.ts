import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { bareAddress, readAnswer } from './answer.rules.ts'

const person = (primary: string, secondary?: string) => ({ naturalPerson: { name: { nameIdentifier: [{ primaryIdentifier: primary, ...(secondary ? { secondaryIdentifier: secondary } : {}), nameIdentifierType: 'LEGL' }] } } })

test('the reference\'s own example answers a deposit: the user themself, with a confirmed self-declaration', () => {
  const data = {
    proof: { type: 'self-declaration', did: 'did:pkh:xrpl:0:rExampleAddress123456789', address: 'xrpl:0:rExampleAddress123456789', attestation: 'I hereby declare…', confirmed: true, status: 'verified' },
    value: { amountDecimal: 4, asset: 'XRP-XRP', counterparty: { name: 'John Doe', type: 'self' } },
    ivms101: { originator: { originatorPersons: [person('Doe', 'John')] } },
  }
  const result = readAnswer('deposit', data)
  assert.ok('answer' in result)
  assert.deepEqual(result.answer, { counterparty: 'self', names: ['John Doe'], proof: { kind: 'self-declaration' } })
})

test('someone else is described by at least one named person of the right side', () => {
  const deposit = readAnswer('deposit', { ivms101: { originator: { originatorPersons: [{ legalPerson: { name: { nameIdentifier: [{ legalPersonName: 'Acme Ltd' }] } } }] } } })
  assert.ok('answer' in deposit)
  assert.deepEqual(deposit.answer.names, ['Acme Ltd'])
  // The beneficiary does not describe a deposit's originator.
  const wrongSide = readAnswer('deposit', { ivms101: { beneficiary: { beneficiaryPersons: [person('Doe')] } } })
  assert.deepEqual(wrongSide, { violations: [{ property: 'data.ivms101.originator.originatorPersons', rule: 'required' }] })
  const withdrawal = readAnswer('withdrawal', { ivms101: { beneficiary: { beneficiaryPersons: [person('Roe', 'Jane')] } } })
  assert.ok('answer' in withdrawal)
  assert.deepEqual(withdrawal.answer, { counterparty: 'other', names: ['Jane Roe'], proof: null })
})

test('a nameless person, an unconfirmed declaration, an incomplete signature are violations', () => {
  assert.deepEqual(readAnswer('withdrawal', { ivms101: { beneficiary: { beneficiaryPersons: [{ naturalPerson: { name: { nameIdentifier: [{ primaryIdentifier: '  ' }] } } }] } } }), {
    violations: [{ property: 'data.ivms101.beneficiary.beneficiaryPersons.0', rule: 'required', ruleParams: { oneOf: ['naturalPerson.name.nameIdentifier.0.primaryIdentifier', 'legalPerson.name.nameIdentifier.0.legalPersonName'] } }],
  })
  assert.deepEqual(readAnswer('deposit', { originatorEqualsBeneficiary: true, proof: { type: 'self-declaration', confirmed: false } }), {
    violations: [{ property: 'data.proof.confirmed', rule: 'const', ruleParams: { allowedValue: true } }],
  })
  assert.deepEqual(readAnswer('deposit', { originatorEqualsBeneficiary: true, proof: { type: 'eip-191', address: '0xabc' } }), {
    violations: [{ property: 'data.proof.attestation', rule: 'required' }, { property: 'data.proof.proof', rule: 'required' }],
  })
  assert.deepEqual(readAnswer('deposit', { originatorEqualsBeneficiary: true }), { violations: [{ property: 'data.proof', rule: 'required' }] })
})

test('a signed message is read with its address stripped of a CAIP-10 prefix', () => {
  const result = readAnswer('deposit', { originatorEqualsBeneficiary: true, proof: { type: 'eip-191', address: 'eip155:1:0xAbC', attestation: 'I own it', proof: '0x12' } })
  assert.ok('answer' in result)
  assert.deepEqual(result.answer.proof, { kind: 'signature', type: 'eip-191', address: '0xAbC', message: 'I own it', signature: '0x12' })
  assert.equal(bareAddress('bc1qxyz'), 'bc1qxyz')
})

test('any JSON object is read without throwing', () => {
  fc.assert(fc.property(fc.dictionary(fc.string(), fc.jsonValue()), fc.constantFrom('deposit', 'withdrawal' as const), (data, direction) => {
    const result = readAnswer(direction, data)
    assert.ok('answer' in result || result.violations.length > 0)
  }))
})
