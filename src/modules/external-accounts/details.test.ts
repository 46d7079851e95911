import assert from 'node:assert/strict'
import { test } from 'node:test'
import { checkAch, checkCard, checkFps, checkSepa, findBinRange, isCardExpired, passesLuhn, type BinRange } from './details.ts'

test('Luhn: test card numbers pass, one changed digit fails, non-digits fail', () => {
  for (const number of ['4242424242424242', '5555555555554444', '378282246310005', '4000000000000002']) assert.ok(passesLuhn(number), number)
  assert.equal(passesLuhn('4242424242424241'), false)
  assert.equal(passesLuhn('4242 4242 4242 4242'), false)
  assert.equal(passesLuhn(''), false)
})

test('a card is valid through the last day of its expiry month, in UTC', () => {
  const expiry = { month: 3, year: 2027 }
  assert.equal(isCardExpired(expiry, new Date('2027-03-31T23:59:59.999Z')), false)
  assert.equal(isCardExpired(expiry, new Date('2027-04-01T00:00:00.000Z')), true)
  assert.equal(isCardExpired({ month: 12, year: 2027 }, new Date('2027-12-31T12:00:00Z')), false)
  assert.equal(isCardExpired({ month: 12, year: 2027 }, new Date('2028-01-01T00:00:00Z')), true)
})

test('card checks: Luhn first, then the expiry, with the reference\'s details', () => {
  const now = new Date('2026-06-15T00:00:00Z')
  assert.equal(checkCard('4242424242424242', { month: 6, year: 2026 }, now), undefined)
  assert.deepEqual(checkCard('4242424242424241', { month: 6, year: 2030 }, now), { code: 'number_invalid', property: 'number', message: 'The card number is invalid' })
  const expired = checkCard('4242424242424242', { month: 5, year: 2026 }, now)
  assert.equal(expired?.code, 'date_invalid')
  assert.deepEqual(expired?.extra, { rule: 'difference-less-than-or-equal-to-threshold', threshold: { limit: 0, unit: 'milliseconds' } })
})

test('the longest matching BIN prefix wins', () => {
  const ranges: BinRange[] = [
    { prefix: '4000', scheme: 'visa', type: 'debit', octSupport: 'supported' },
    { prefix: '40000025', scheme: 'visa', type: 'debit', octSupport: 'supported', country: 'FR' },
    { prefix: '5', scheme: 'mastercard', type: 'credit', octSupport: 'unsupported' },
  ]
  assert.equal(findBinRange(ranges, '4000002500000003')?.country, 'FR')
  assert.equal(findBinRange(ranges, '4000000000000002')?.country, undefined)
  assert.equal(findBinRange(ranges, '4000000000000002')?.prefix, '4000')
  assert.equal(findBinRange(ranges, '378282246310005'), undefined)
})

test('ACH: routing checksum, US address, ZIP code', () => {
  const address = { country: 'US', subdivision: 'US-CA', postalCode: '94102' }
  assert.equal(checkAch({ routingNumber: '121000248', accountNumber: '9876543210', address }), undefined)
  assert.equal(checkAch({ routingNumber: '121000248', accountNumber: '9876543210', address: { ...address, postalCode: '94102-1234' } }), undefined)
  assert.equal(checkAch({ routingNumber: '121000249', accountNumber: '9876543210', address })?.property, 'routingNumber')
  assert.equal(checkAch({ routingNumber: '121000248', accountNumber: '9876543210', address: { ...address, country: 'CA' } })?.code, 'country_not_supported')
  assert.equal(checkAch({ routingNumber: '121000248', accountNumber: '9876543210', address: { ...address, postalCode: 'SW1A 1AA' } })?.code, 'postal_code_invalid')
})

test('FPS: the UK modulus checks', () => {
  // Vocalink's published examples: a valid pair, and the same account under another sort code.
  assert.equal(checkFps({ sortCode: '089999', accountNumber: '66374958' }), undefined)
  assert.equal(checkFps({ sortCode: '089999', accountNumber: '66374959' })?.code, 'number_invalid')
})

test('SEPA: IBAN and BIC checksums and formats; the electronic form is kept', () => {
  assert.deepEqual(checkSepa({ iban: 'de89 3704 0044 0532 0130 00', bic: 'cobadeffxxx' }), { iban: 'DE89370400440532013000', bic: 'COBADEFFXXX' })
  assert.equal((checkSepa({ iban: 'DE89370400440532013001', bic: 'COBADEFFXXX' }) as { property: string }).property, 'iban')
  assert.equal((checkSepa({ iban: 'DE89370400440532013000', bic: 'COBA' }) as { property: string }).property, 'bic')
})
