import assert from 'node:assert/strict'
import { test } from 'node:test'
import { DEFAULT_TRAVEL_RULE, needsTravelRule, selfDeclarationSuffices, thresholdUsd, type TravelRuleRules } from './travel-rule.policy.ts'

const rules: TravelRuleRules = { default: { thresholdUsd: '1000' }, assets: { XRP: { thresholdUsd: '0' }, BTC: { thresholdUsd: '3000' } }, selfDeclarationMaximumUsd: '1000' }

test('the threshold is the asset\'s own, else the default', () => {
  assert.equal(thresholdUsd(rules, 'BTC'), '3000')
  assert.equal(thresholdUsd(rules, 'ETH'), '1000')
  assert.equal(thresholdUsd(DEFAULT_TRAVEL_RULE, 'BTC'), '1000')
  // An inherited property is not an asset.
  assert.equal(thresholdUsd(rules, 'constructor'), '1000')
})

test('at or above the threshold an undeclared party needs the travel rule; below it, or declared, not', () => {
  assert.equal(needsTravelRule(rules, { asset: 'ETH', valueUsd: '999.99', counterpartyDeclared: false }), false)
  assert.equal(needsTravelRule(rules, { asset: 'ETH', valueUsd: '1000', counterpartyDeclared: false }), true)
  assert.equal(needsTravelRule(rules, { asset: 'ETH', valueUsd: '5000', counterpartyDeclared: true }), false)
  assert.equal(needsTravelRule(rules, { asset: 'BTC', valueUsd: '2999', counterpartyDeclared: false }), false)
  assert.equal(needsTravelRule(rules, { asset: 'XRP', valueUsd: '0.01', counterpartyDeclared: false }), true)
})

test('an asset without a price is screened as above any threshold', () => {
  assert.equal(needsTravelRule(rules, { asset: 'ETH', valueUsd: null, counterpartyDeclared: false }), true)
  assert.equal(needsTravelRule(rules, { asset: 'ETH', valueUsd: null, counterpartyDeclared: true }), false)
})

test('a self-declaration suffices below its maximum only', () => {
  assert.equal(selfDeclarationSuffices(rules, '999'), true)
  assert.equal(selfDeclarationSuffices(rules, '1000'), false)
  assert.equal(selfDeclarationSuffices(rules, null), false)
})
