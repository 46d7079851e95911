import assert from 'node:assert/strict'
import { test } from 'node:test'
import { checkBirthdate, checkPastTimestamp } from './users.rules.ts'

const now = new Date('2026-11-22T10:00:00.000Z')

test('a user turning 18 today is accepted; one day younger is not', () => {
  assert.equal(checkBirthdate('2008-11-22', now), null)
  const error = checkBirthdate('2008-11-23', now)
  assert.equal(error?.code, 'date_invalid')
  assert.deepEqual(error?.details?.threshold, { limit: 18, unit: 'years' })
})

test('a user born exactly 100 years ago is accepted; one day earlier is not', () => {
  assert.equal(checkBirthdate('1926-11-22', now), null)
  assert.equal(checkBirthdate('1926-11-21', now)?.details?.rule, 'difference-less-than-or-equal-to-threshold')
})

test('on 29 February the age limits fall on 28 February', () => {
  const leap = new Date('2028-02-29T12:00:00.000Z')
  assert.equal(checkBirthdate('2010-02-28', leap), null)
  assert.notEqual(checkBirthdate('2010-03-01', leap), null)
})

test('a partner onboarding time must be in the past', () => {
  assert.equal(checkPastTimestamp('partnerOnboardedAt', '2026-11-22T09:59:59.000Z', now), null)
  assert.equal(checkPastTimestamp('partnerOnboardedAt', '2026-11-22T10:00:00.000Z', now)?.details?.property, 'partnerOnboardedAt')
})
