import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { evaluateCapability, isUsable, requiredProcesses, type CapabilityDefinition, type CapabilityFacts } from './capabilities.rules.ts'

const trades: CapabilityDefinition = {
  code: 'trades',
  name: 'Trades',
  requires: ['identity', 'customerDueDiligence', 'proofOfAddress'],
  requiresWhenResidentIn: { GB: ['selfCategorizationStatement', 'cryptoRiskAssessment'] },
}
const viban: CapabilityDefinition = { code: 'unique-account-number-viban', name: 'vIBAN', requires: ['identity', 'address'], termsOfService: ['unique-account-number-viban'] }
const cards: CapabilityDefinition = { code: 'cards', name: 'Cards', requires: ['identity', 'address'], userTypes: ['individual'] }

function facts(overrides: Partial<CapabilityFacts> = {}): CapabilityFacts {
  return {
    userType: 'individual',
    residence: { country: 'FR' },
    residenceRefused: { country: false, subdivision: false },
    phoneCountryRefused: false,
    kyc: {},
    acceptedTermsOfService: new Set(),
    ...overrides,
  }
}
const verified = { identity: 'ok', customerDueDiligence: 'ok', proofOfAddress: 'ok', address: 'ok', profile: 'ok' } as const

describe('capability rules', () => {
  test('a new user must submit every required process; the capability is enabled but not usable', () => {
    const capability = evaluateCapability(trades, facts())
    assert.deepEqual(capability, {
      code: 'trades',
      name: 'Trades',
      enabled: true,
      requirements: ['user-must-submit-identity', 'user-must-submit-customer-due-diligence', 'user-must-submit-proof-of-address'],
      restrictions: [],
    })
    assert.equal(isUsable(capability), false)
  })

  test('verified processes satisfy their requirements; exempt counts as satisfied', () => {
    const capability = evaluateCapability(trades, facts({ kyc: { ...verified, proofOfAddress: 'exempt' } }))
    assert.deepEqual(capability.requirements, [])
    assert.equal(isUsable(capability), true)
  })

  test('a process under review is still a requirement', () => {
    assert.deepEqual(evaluateCapability(trades, facts({ kyc: { ...verified, identity: 'running' } })).requirements, ['user-must-submit-identity'])
  })

  test('residents of GB must also pass the financial-promotion steps for trades', () => {
    const gb = facts({ residence: { country: 'GB' }, kyc: verified })
    assert.deepEqual(requiredProcesses(trades, gb).slice(3), ['selfCategorizationStatement', 'cryptoRiskAssessment'])
    assert.deepEqual(evaluateCapability(trades, gb).requirements, ['user-must-submit-self-categorization-form', 'user-must-submit-crypto-risk-assessment-form'])
    const done = facts({ residence: { country: 'GB' }, kyc: { ...verified, selfCategorizationStatement: 'ok', cryptoRiskAssessment: 'ok' } })
    assert.equal(isUsable(evaluateCapability(trades, done)), true)
  })

  test('failed processes become restrictions and disable the capability', () => {
    const capability = evaluateCapability(trades, facts({ residence: { country: 'GB' }, kyc: { ...verified, identity: 'failed', selfCategorizationStatement: 'failed', cryptoRiskAssessment: 'failed' } }))
    assert.equal(capability.enabled, false)
    assert.deepEqual(capability.restrictions, ['user-identity-not-valid', 'self-categorization-statement-form-not-valid', 'crypto-risk-assessment-form-not-valid'])
  })

  test('a failed process without a restriction of its own is user-status-not-valid', () => {
    assert.deepEqual(evaluateCapability(trades, facts({ kyc: { ...verified, customerDueDiligence: 'failed' } })).restrictions, ['user-status-not-valid'])
  })

  test('refused residence, subdivision and phone country restrict every capability', () => {
    assert.deepEqual(evaluateCapability(trades, facts({ residenceRefused: { country: true, subdivision: true }, kyc: verified })).restrictions, ['user-country-not-supported'])
    assert.deepEqual(evaluateCapability(trades, facts({ residenceRefused: { country: false, subdivision: true }, kyc: verified })).restrictions, ['user-state-not-supported'])
    assert.deepEqual(evaluateCapability(trades, facts({ phoneCountryRefused: true, kyc: verified })).restrictions, ['phone-country-not-supported'])
  })

  test('screening running or failed, and a failed risk assessment, restrict', () => {
    assert.deepEqual(evaluateCapability(trades, facts({ kyc: { ...verified, screening: 'running' } })).restrictions, ['user-screening-running'])
    assert.deepEqual(evaluateCapability(trades, facts({ kyc: { ...verified, screening: 'failed' } })).restrictions, ['user-status-not-valid'])
    assert.deepEqual(evaluateCapability(trades, facts({ kyc: { ...verified, risk: 'failed' } })).restrictions, ['user-status-not-valid'])
    assert.equal(isUsable(evaluateCapability(trades, facts({ kyc: { ...verified, screening: 'ok', risk: 'ok' } }))), true)
  })

  test('terms of service a capability needs are requirements until accepted', () => {
    assert.deepEqual(evaluateCapability(viban, facts({ kyc: verified })).requirements, ['user-must-accept-unique-account-number-viban-terms-of-service'])
    assert.equal(isUsable(evaluateCapability(viban, facts({ kyc: verified, acceptedTermsOfService: new Set(['unique-account-number-viban']) }))), true)
  })

  test('user types and disabled capabilities', () => {
    assert.deepEqual(evaluateCapability(cards, facts({ userType: 'business', kyc: verified })).restrictions, ['user-type-not-supported'])
    assert.deepEqual(evaluateCapability({ ...cards, disabled: true }, facts({ kyc: verified })).restrictions, ['temporarily-disabled'])
  })
})
