import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Ajv } from 'ajv'
import addFormats from 'ajv-formats'
import { toViolations, type SchemaError } from './violations.ts'

const ajv = new Ajv({ allErrors: true, strict: false })
addFormats.default(ajv)
// Two flows told apart by `flow`, as the widget session bodies are.
const validate = ajv.compile({
  anyOf: [
    { type: 'object', properties: { flow: { const: 'deposit-form' }, data: { type: 'object', properties: { requestForInformationId: { type: 'string', format: 'uuid' } } } }, required: ['flow', 'data'] },
    { type: 'object', properties: { flow: { const: 'withdrawal-form' }, data: { type: 'object', properties: { quoteId: { type: 'string', format: 'uuid' } }, required: ['quoteId'] } }, required: ['flow', 'data'] },
  ],
})
const violationsOf = (body: unknown) => {
  assert.equal(validate(body), false)
  return toViolations(validate.errors as SchemaError[])
}

test('a union reports the branch the value\'s discriminator names, not the one with the fewest failures', () => {
  assert.deepEqual(violationsOf({ flow: 'withdrawal-form', data: { quoteId: 'nope' } }), [{ property: 'data.quoteId', rule: 'format', ruleParams: { format: 'uuid' } }])
  assert.deepEqual(violationsOf({ flow: 'withdrawal-form', data: {} }), [{ property: 'data.quoteId', rule: 'required' }])
  assert.deepEqual(violationsOf({ flow: 'deposit-form', data: { requestForInformationId: 42 } }), [{ property: 'data.requestForInformationId', rule: 'type', ruleParams: { type: 'string' } }])
})

test('a discriminator no branch takes: the closest branch\'s failures, its literal among them', () => {
  const violations = violationsOf({ flow: 'sideways', data: {} })
  assert.ok(violations.some((violation) => violation.property === 'flow' && violation.rule === 'const'), JSON.stringify(violations))
})
