import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { createAjv, isVisible, type UISchemaElement } from '@jsonforms/core'
import fc from 'fast-check'
import { answerViolations, hintOf, isComplete, negotiateFormLocale, remainingSchema } from './forms.ts'
import { SELF_CATEGORIZATION_FORM as FORM, SELF_CATEGORIZATION_FORM_ID, PERCENTAGE_PATTERN, statementExpired } from './self-categorization.ts'

const profile = (answers: Record<string, unknown>) => ({ 'investor-profile': answers })
const complete = {
  'invested-less-than-10-percent': 'yes',
  'invested-percentage': '5',
  'invest-less-than-10-percent': 'yes',
  'invest-percentage': '9.99',
  'investor-type-confirmation': true,
}

/** Sample answers with the verdict the specification gives them (true: valid). */
const SAMPLES: [string, unknown, boolean][] = [
  ['restricted investor', { investor: { type: 'restricted_investor' } }, true],
  ['high-net-worth investor', { investor: { type: 'high_net_worth_investor' } }, true],
  ['unknown investor type', { investor: { type: 'professional' } }, false],
  ['investor type missing', { investor: {} }, false],
  ['extra investor property', { investor: { type: 'restricted_investor', other: 1 } }, false],
  ['complete profile', profile(complete), true],
  ['both answers no, no percentages', profile({ ...complete, 'invested-less-than-10-percent': 'no', 'invested-percentage': undefined, 'invest-less-than-10-percent': 'no', 'invest-percentage': undefined }), true],
  ['percentage given although the answer is no', profile({ ...complete, 'invested-less-than-10-percent': 'no' }), false],
  ['percentage missing although the answer is yes', profile({ ...complete, 'invest-percentage': undefined }), false],
  ['answer missing', profile({ ...complete, 'invest-less-than-10-percent': undefined, 'invest-percentage': undefined }), false],
  ['answer neither yes nor no', profile({ ...complete, 'invested-less-than-10-percent': 'maybe' }), false],
  ['confirmation false', profile({ ...complete, 'investor-type-confirmation': false }), false],
  ['confirmation missing', profile({ ...complete, 'investor-type-confirmation': undefined }), false],
  ['percentage 100', profile({ ...complete, 'invested-percentage': '100' }), true],
  ['percentage 100.00', profile({ ...complete, 'invested-percentage': '100.00' }), true],
  ['percentage 0', profile({ ...complete, 'invested-percentage': '0' }), true],
  ['percentage 0.5', profile({ ...complete, 'invested-percentage': '0.5' }), true],
  ['percentage above 100', profile({ ...complete, 'invested-percentage': '100.01' }), false],
  ['percentage with three decimals', profile({ ...complete, 'invested-percentage': '5.125' }), false],
  ['negative percentage', profile({ ...complete, 'invested-percentage': '-1' }), false],
  ['percentage as a number', profile({ ...complete, 'invested-percentage': 5 }), false],
  ['percentage with a trailing dot', profile({ ...complete, 'invested-percentage': '5.' }), false],
  ['percentage with a leading zero', profile({ ...complete, 'invested-percentage': '005' }), false],
  ['percentage with one leading zero', profile({ ...complete, 'invested-percentage': '05' }), false],
  ['unknown category', { wealth: { a: 1 } }, false],
]

const defined = (value: unknown): unknown => JSON.parse(JSON.stringify(value))

describe('self-categorization form', () => {
  test('a client validating with its own ajv against the served schema agrees with the server on every sample', () => {
    const served = hintOf(FORM, [], 'en').schema
    const clientAjv = createAjv()
    const validate = clientAjv.compile(served)
    for (const [name, answers, valid] of SAMPLES) {
      const client = validate(defined(answers))
      const server = answerViolations(FORM, [], defined(answers)).length === 0
      assert.equal(client, valid, `client: ${name}`)
      assert.equal(server, valid, `server: ${name}`)
    }
  })

  test('the server names the violated question from the request body', () => {
    const violations = answerViolations(FORM, [], profile({ ...complete, 'invested-less-than-10-percent': 'no' }))
    assert.ok(violations.some((v) => v.property === 'input.answers.investor-profile.invested-percentage' && v.rule === 'not'), JSON.stringify(violations))
    const missing = answerViolations(FORM, [], profile({ ...complete, 'invest-percentage': undefined }))
    assert.ok(missing.some((v) => v.property === 'input.answers.investor-profile.invest-percentage' && v.rule === 'required'), JSON.stringify(missing))
    const pattern = answerViolations(FORM, [], defined(profile({ ...complete, 'invested-percentage': '101' })))
    assert.ok(pattern.some((v) => v.property === 'input.answers.investor-profile.invested-percentage' && v.rule === 'pattern'))
  })

  test('the served uiSchema shows each percentage only when its answer is yes (JSON Forms rule evaluation)', () => {
    const hint = hintOf(FORM, [], 'en')
    const ajv = createAjv()
    const categories = (hint.uiSchema as { elements: { label: string; elements: (UISchemaElement & { scope: string })[] }[] }).elements
    assert.deepEqual(categories.map((c) => c.label), ['Investor categorization', 'Investor profile'])
    const controls = categories[1]!.elements
    const control = (name: string) => controls.find((c) => c.scope.endsWith(`/${name}`))!
    const visible = (name: string, data: unknown) => isVisible(control(name), data, '', ajv, undefined)
    const data = (invested: string | undefined, invest: string | undefined) => ({ 'investor-profile': { 'invested-less-than-10-percent': invested, 'invest-less-than-10-percent': invest } })

    assert.equal(visible('invested-percentage', data('yes', 'no')), true)
    assert.equal(visible('invest-percentage', data('yes', 'no')), false)
    assert.equal(visible('invested-percentage', data('no', 'yes')), false)
    assert.equal(visible('invest-percentage', data('no', 'yes')), true)
    assert.equal(visible('invested-percentage', data(undefined, undefined)), false)
    for (const always of ['invested-less-than-10-percent', 'invest-less-than-10-percent', 'investor-type-confirmation']) {
      assert.equal(visible(always, data(undefined, undefined)), true)
    }
    // Every control points at a property of the served schema.
    const schema = hint.schema as { properties: Record<string, { properties: Record<string, unknown> }> }
    for (const c of controls) assert.ok(schema.properties['investor-profile']!.properties[c.scope.split('/').pop()!], c.scope)
  })

  test('the hint serves the categories still unanswered, with a stable form id', () => {
    assert.equal(hintOf(FORM, [], 'en').formId, SELF_CATEGORIZATION_FORM_ID)
    assert.deepEqual(Object.keys((remainingSchema(FORM, ['investor']) as { properties: object }).properties), ['investor-profile'])
    assert.deepEqual((hintOf(FORM, ['investor'], 'en').uiSchema as { elements: unknown[] }).elements.length, 1)
    assert.equal(isComplete(FORM, ['investor']), false)
    assert.equal(isComplete(FORM, ['investor-profile', 'investor']), true)
    // A category already answered is not answered again in the same attempt.
    assert.ok(answerViolations(FORM, ['investor'], { investor: { type: 'restricted_investor' } }).some((v) => v.rule === 'additionalProperties'))
  })

  test('texts follow the language; missing translations fall back to English', () => {
    const fr = hintOf(FORM, [], 'fr') as unknown as { uiSchema: { elements: { label: string }[] } }
    assert.equal(fr.uiSchema.elements[0]!.label, 'Catégorie d’investisseur')
    assert.deepEqual(hintOf(FORM, [], 'fr').schema.additionalProperties, false)
  })

  test('percentages: exactly the decimals from 0 to 100 with at most two decimals, written without a leading zero', () => {
    const pattern = new RegExp(PERCENTAGE_PATTERN, 'u')
    const oracle = (text: string) => /^(?:0|[1-9][0-9]*)(?:\.[0-9]{1,2})?$/.test(text) && Number(text) >= 0 && Number(text) <= 100
    const structured = fc
      .tuple(fc.integer({ min: -10, max: 1000 }), fc.option(fc.stringMatching(/^[0-9]{0,3}$/)))
      .map(([whole, decimals]) => (decimals === null ? String(whole) : `${whole}.${decimals}`))
    const noisy = fc.stringMatching(/^[0-9.\- ]{0,7}$/)
    fc.assert(fc.property(fc.oneof(structured, noisy), (text) => pattern.test(text) === oracle(text)), { numRuns: 5000 })
    for (const text of ['0', '0.5', '9.99', '10', '99.99', '100', '100.0', '100.00']) assert.ok(pattern.test(text), text)
    for (const text of ['05', '100.01', '101', '1.', '.5', '1.234', '-0', '']) assert.ok(!pattern.test(text), text)
  })

  test('review: restricted investors below 10% both ways are approved; high-net-worth investors are approved', () => {
    const review = (type: string, answers: Record<string, unknown>) => FORM.review({ investor: { type }, 'investor-profile': answers }).approved
    assert.equal(review('restricted_investor', complete), true)
    assert.equal(review('restricted_investor', { ...complete, 'invest-percentage': '10' }), false)
    assert.equal(review('restricted_investor', { ...complete, 'invested-percentage': '10.00' }), false)
    assert.equal(review('restricted_investor', { ...complete, 'invested-less-than-10-percent': 'no', 'invested-percentage': undefined }), false)
    assert.equal(review('restricted_investor', { ...complete, 'invest-less-than-10-percent': 'no', 'invest-percentage': undefined }), false)
    assert.equal(review('high_net_worth_investor', { ...complete, 'invest-less-than-10-percent': 'no', 'invest-percentage': undefined }), true)
  })
})

describe('Accept-Language', () => {
  test('picks the most preferred language served, English otherwise; malformed headers are null', () => {
    assert.equal(negotiateFormLocale(undefined), 'en')
    assert.equal(negotiateFormLocale('fr-FR'), 'fr')
    assert.equal(negotiateFormLocale('de-DE, fr;q=0.8, en;q=0.5'), 'fr')
    assert.equal(negotiateFormLocale('en;q=0.4, fr;q=0.9'), 'fr')
    assert.equal(negotiateFormLocale('de'), 'en')
    assert.equal(negotiateFormLocale('*'), 'en')
    assert.equal(negotiateFormLocale('fr;q=0, en'), 'en')
    assert.equal(negotiateFormLocale('not a locale!'), null)
    assert.equal(negotiateFormLocale('en;q=2'), null)
  })
})

describe('self-categorization expiry', () => {
  const approved = (expiresAt: unknown) => ({ result: 'approved', attempts: { used: 1, maximum: 30 }, expiresAt, verifiedAt: '2025-01-01T00:00:00.000Z' })
  const at = new Date('2026-01-01T00:00:00.000Z')

  test('an approved statement expires at its expiresAt, not before', () => {
    assert.equal(statementExpired(approved('2026-01-01T00:00:00.001Z'), at), false)
    assert.equal(statementExpired(approved('2026-01-01T00:00:00.000Z'), at), true)
    assert.equal(statementExpired(approved('2025-06-30T12:00:00.000Z'), at), true)
  })

  test('a rejected statement, one without an outcome, or one without a readable expiresAt never expires', () => {
    assert.equal(statementExpired({ result: 'rejected', expiresAt: '2020-01-01T00:00:00.000Z' }, at), false)
    assert.equal(statementExpired(null, at), false)
    assert.equal(statementExpired(approved(undefined), at), false)
    assert.equal(statementExpired(approved('not a time'), at), false)
    assert.equal(statementExpired(approved(1_000), at), false)
  })
})
