import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { activeCooldowns, featuresFor, featuresWithoutCapability, mayCoolDown, type CooldownRule, type RestrictionRule } from './asset-rules.ts'

const ALL = ['buy', 'deposit', 'sell', 'transfer', 'withdraw'] as const
const btc = { code: 'BTC', type: 'crypto' as const, features: [...ALL] }
const gbp = { code: 'GBP', type: 'fiat' as const, features: [...ALL] }
const restrictions: RestrictionRule[] = [
  { description: 'NY', regions: ['US-NY'], assetTypes: ['crypto'], features: ['buy', 'sell'] },
  { description: 'one coin', regions: ['FR'], assets: ['BTC'], features: ['deposit'] },
]
const cooldownRules: CooldownRule[] = [
  { rule: 'financial-promotions', description: 'UK', regions: ['GB'], assetTypes: ['crypto'], features: ['buy', 'deposit'], hours: 24 },
]
const since = new Date('2025-01-01T00:00:00.000Z')
const hoursLater = (hours: number) => new Date(since.getTime() + hours * 3_600_000)

describe('asset rules', () => {
  test('restrictions apply by country or subdivision, to the assets they name', () => {
    assert.deepEqual(featuresFor(btc, { country: 'US', subdivision: 'US-NY' }, restrictions, []), ['deposit', 'transfer', 'withdraw'])
    assert.deepEqual(featuresFor(btc, { country: 'US', subdivision: 'US-CA' }, restrictions, []), [...ALL])
    assert.deepEqual(featuresFor(gbp, { country: 'US', subdivision: 'US-NY' }, restrictions, []), [...ALL])
    assert.deepEqual(featuresFor(btc, { country: 'FR' }, restrictions, []), ['buy', 'sell', 'transfer', 'withdraw'])
    assert.deepEqual(featuresFor(btc, null, restrictions, []), [...ALL], 'no residence, no narrowing')
  })

  test('a cooldown runs from onboarding for its hours, removes its features, and ends when skipped', () => {
    const gb = { residence: { country: 'GB' }, since, cooldownsSkippedAt: null }
    const running = activeCooldowns(btc, gb, cooldownRules, hoursLater(1))
    assert.deepEqual(running, [{ rule: 'financial-promotions', features: ['buy', 'deposit'], endsAt: '2025-01-02T00:00:00.000Z' }])
    assert.deepEqual(featuresFor(btc, gb.residence, [], running), ['sell', 'transfer', 'withdraw'])
    assert.deepEqual(activeCooldowns(btc, gb, cooldownRules, hoursLater(24)), [])
    assert.deepEqual(activeCooldowns(gbp, gb, cooldownRules, hoursLater(1)), [])
    assert.deepEqual(activeCooldowns(btc, { ...gb, residence: { country: 'DE' } }, cooldownRules, hoursLater(1)), [])
    assert.deepEqual(activeCooldowns(btc, { ...gb, cooldownsSkippedAt: hoursLater(0.5) }, cooldownRules, hoursLater(1)), [])
  })

  test('a cooldown may run only where a rule covers the residence and within its hours of onboarding', () => {
    const gb = { residence: { country: 'GB' }, since }
    assert.equal(mayCoolDown(gb, cooldownRules, hoursLater(1)), true)
    assert.equal(mayCoolDown(gb, cooldownRules, hoursLater(24)), false)
    assert.equal(mayCoolDown({ ...gb, residence: { country: 'DE' } }, cooldownRules, hoursLater(1)), false)
    assert.equal(mayCoolDown({ ...gb, residence: null }, cooldownRules, hoursLater(1)), false)
  })

  test('features whose capability is restricted for the user are left out, by asset type', () => {
    const enabled = new Set(['trades', 'sends', 'crypto-deposits', 'bank-withdrawals'])
    assert.deepEqual(featuresWithoutCapability(btc, enabled), ['withdraw'])
    assert.deepEqual(featuresWithoutCapability(gbp, enabled), ['deposit'])
    assert.deepEqual(featuresFor(btc, { country: 'FR' }, restrictions, [], enabled), ['buy', 'sell', 'transfer'])
    assert.deepEqual(featuresFor(btc, { country: 'DE' }, [], [], new Set()), [], 'every capability restricted')
    assert.deepEqual(featuresFor(btc, { country: 'DE' }, [], [], null), [...ALL], 'capabilities not known: no narrowing by them')
  })
})
