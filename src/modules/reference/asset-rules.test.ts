import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { activeCooldowns, cooldownEnds, cooldownsEndingAt, featuresFor, featuresWithoutCapability, mayCoolDown, type CooldownRule, type RestrictionRule } from './asset-rules.ts'

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

  test('the ends of the cooldowns that may cover a user: by country or any of its subdivisions, distinct, soonest first', () => {
    const rules: CooldownRule[] = [
      ...cooldownRules,
      { rule: 'financial-promotions', description: 'Manchester', regions: ['GB-MAN'], assets: ['ETH'], features: ['buy'], hours: 48 },
      { rule: 'financial-promotions', description: 'UK again', regions: ['GB'], assets: ['XRP'], features: ['deposit'], hours: 24 },
    ]
    assert.deepEqual(cooldownEnds('GB', since, rules), [hoursLater(24), hoursLater(48)])
    assert.deepEqual(cooldownEnds('DE', since, rules), [])
    assert.deepEqual(cooldownEnds('G', since, rules), [], 'a prefix of a country is not the country')
  })

  test('the cooldowns ending at a moment: grouped by the features held back, assets in code order, none when skipped or moved', () => {
    const usdc = { code: 'USDC', type: 'crypto' as const, features: ['buy', 'sell', 'transfer'] as const }
    const busd = { code: 'BUSD', type: 'crypto' as const, features: [] as const }
    const eth = { code: 'ETH', type: 'crypto' as const, features: [...ALL] }
    const catalogue = [usdc, btc, gbp, busd, eth]
    const gb = { residence: { country: 'GB' }, since, cooldownsSkippedAt: null }
    assert.deepEqual(cooldownsEndingAt(catalogue, gb, cooldownRules, hoursLater(24)), [
      { rule: 'financial-promotions', features: ['buy'], assets: ['USDC'] },
      { rule: 'financial-promotions', features: ['buy', 'deposit'], assets: ['BTC', 'ETH'] },
    ])
    // What activeCooldowns showed until then ends then: nothing else.
    assert.deepEqual(activeCooldowns(btc, gb, cooldownRules, new Date(hoursLater(24).getTime() - 1))[0]!.endsAt, hoursLater(24).toISOString())
    assert.deepEqual(cooldownsEndingAt(catalogue, gb, cooldownRules, hoursLater(23)), [])
    assert.deepEqual(cooldownsEndingAt(catalogue, { ...gb, residence: { country: 'DE' } }, cooldownRules, hoursLater(24)), [])
    assert.deepEqual(cooldownsEndingAt(catalogue, { ...gb, cooldownsSkippedAt: hoursLater(2) }, cooldownRules, hoursLater(24)), [], 'skipped while it ran')
    assert.equal(cooldownsEndingAt(catalogue, { ...gb, cooldownsSkippedAt: hoursLater(25) }, cooldownRules, hoursLater(24)).length, 2, 'skipped after it ended')
    assert.equal(cooldownsEndingAt(catalogue, { ...gb, cooldownsSkippedAt: new Date(since.getTime() - 1) }, cooldownRules, hoursLater(24)).length, 2, 'skipped before it began')
    assert.deepEqual(cooldownsEndingAt(catalogue, { ...gb, since: hoursLater(-100) }, cooldownRules, hoursLater(24)), [], 'onboarding moved back')
    const twoRules: CooldownRule[] = [...cooldownRules, { rule: 'financial-promotions', description: 'fiat too', regions: ['GB-MAN'], assetTypes: ['fiat'], features: ['deposit', 'buy'], hours: 24 }]
    assert.deepEqual(cooldownsEndingAt([btc, gbp], { ...gb, residence: { country: 'GB', subdivision: 'GB-MAN' } }, twoRules, hoursLater(24)), [
      { rule: 'financial-promotions', features: ['buy', 'deposit'], assets: ['BTC', 'GBP'] },
    ])
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
