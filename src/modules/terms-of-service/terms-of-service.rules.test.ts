import assert from 'node:assert/strict'
import { test } from 'node:test'
import { checkApplicable, checkCatalogue, checkGeneralTerms, generalTermsFor, matchesFilters } from './terms-of-service.rules.ts'
import type { TermsOfServiceDefinition } from './terms-of-service.schemas.ts'

const viban: TermsOfServiceDefinition = { code: 'unique-account-number-viban', type: 'unique-account-number', countries: ['GB', 'PT'], userTypes: ['individual'], modifiedAt: '2024-12-01T00:00:00.000Z' }
const everywhere: TermsOfServiceDefinition = { code: 'general-bs-scb', type: 'general', modifiedAt: '2025-02-01T00:00:00.000Z' }

test('terms apply to the listed user types and countries of residence; omitted lists mean all', () => {
  assert.equal(checkApplicable(viban, { type: 'individual', country: 'GB' }), null)
  const business = checkApplicable(viban, { type: 'business', country: 'GB' })
  assert.equal(business?.code, 'operation_not_allowed')
  assert.deepEqual(business?.details, { reasons: ['terms-of-service-not-applicable'] })
  assert.match(business!.message, /type 'business'/)
  assert.match(checkApplicable(viban, { type: 'individual', country: 'FR' })!.message, /country of residence/)
  assert.notEqual(checkApplicable(viban, { type: 'individual', country: undefined }), null, 'an unknown residence does not match a country list')
  assert.equal(checkApplicable(everywhere, { type: 'business', country: undefined }), null)
})

test('filters: type exactly; country and user type also match terms that apply everywhere', () => {
  assert.ok(matchesFilters(viban, {}))
  assert.ok(matchesFilters(viban, { type: 'unique-account-number', country: 'PT', userType: 'individual' }))
  assert.ok(!matchesFilters(viban, { type: 'general' }))
  assert.ok(!matchesFilters(viban, { country: 'US' }))
  assert.ok(!matchesFilters(viban, { userType: 'business' }))
  assert.ok(matchesFilters(everywhere, { country: 'US', userType: 'business' }))
})

test('the catalogue must name each code once, with the type its code starts with', () => {
  assert.doesNotThrow(() => checkCatalogue([viban, everywhere]))
  assert.throws(() => checkCatalogue([viban, viban]), /defined twice/)
  assert.throws(() => checkCatalogue([{ ...everywhere, type: 'unique-account-number' }]), /its type must be/)
  assert.throws(() => checkCatalogue([{ ...everywhere, modifiedAt: '2025-02-31T00:00:00Z' }]), /not a date/)
  assert.throws(() => checkCatalogue([{ ...everywhere, url: 'https://exa mple' }]), /not a URL/)
})

test('a new user accepts the general terms of their country of residence, else those that name no country', () => {
  const gb: TermsOfServiceDefinition = { code: 'general-gb-fca', type: 'general', countries: ['GB'], modifiedAt: '2025-02-01T00:00:00.000Z' }
  const businessOnly: TermsOfServiceDefinition = { code: 'general-us-hq', type: 'general', countries: ['US'], userTypes: ['business'], modifiedAt: '2025-02-01T00:00:00.000Z' }
  const catalogue = [gb, everywhere, viban, businessOnly]
  const codes = (country: string | undefined, type: 'individual' | 'business' = 'individual') => generalTermsFor(catalogue, { type, country }).map((t) => t.code)
  assert.deepEqual(codes('GB'), ['general-gb-fca'], 'the terms of the country, not the ones for everywhere')
  assert.deepEqual(codes('FR'), ['general-bs-scb'])
  assert.deepEqual(codes(undefined), ['general-bs-scb'])
  assert.deepEqual(codes('US'), ['general-bs-scb'], 'terms of the country for another user type do not apply')
  assert.deepEqual(codes('US', 'business'), ['general-us-hq'])
  assert.equal(checkGeneralTerms(catalogue, 'general-gb-fca', { type: 'individual', country: 'GB' }), null)
  const mismatch = checkGeneralTerms(catalogue, 'general-bs-scb', { type: 'individual', country: 'GB' })
  assert.equal(mismatch?.code, 'terms_of_service_mismatch')
  assert.deepEqual(mismatch?.details, { context: 'body', property: 'termsOfService', allowedValues: ['general-gb-fca'] })
  assert.equal(checkGeneralTerms(catalogue, 'unique-account-number-viban', { type: 'individual', country: 'GB' })?.code, 'terms_of_service_mismatch', 'not general terms')
})
