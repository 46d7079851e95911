import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { isValidIBAN } from 'ibantools'
import {
  candidateIban,
  candidatePaymentReference,
  candidateUkAccountNumber,
  candidateUsAccountNumber,
  ibanOf,
  isValidRoutingNumber,
  isValidUkAccount,
  normalizeIban,
  routingCheckDigit,
} from './bank-numbers.ts'

const KEY = new Uint8Array(32).fill(3)

describe('IBAN', () => {
  test('check digits of the official examples (ECBS / SWIFT IBAN registry)', () => {
    assert.equal(ibanOf('GB', 'WEST12345698765432'), 'GB82WEST12345698765432')
    assert.equal(ibanOf('DE', '370400440532013000'), 'DE89370400440532013000')
    assert.equal(ibanOf('NL', 'ABNA0417164300'), 'NL91ABNA0417164300')
    assert.equal(ibanOf('AT', '1904300234573201'), 'AT611904300234573201')
    assert.equal(ibanOf('FR', '20041010050500013M02606'), 'FR1420041010050500013M02606')
    assert.equal(ibanOf('NL', 'ABNA041716430'), undefined) // one digit short
  })

  test('normalizes the paper form and refuses wrong check digits', () => {
    assert.equal(normalizeIban('nl91 abna 0417 1643 00'), 'NL91ABNA0417164300')
    assert.equal(normalizeIban('NL92ABNA0417164300'), undefined)
  })

  test('candidates are valid, deterministic, and differ per attempt', () => {
    const bank = { countryCode: 'NL', bankCode: 'TSRA', accountDigits: 10 }
    const seen = new Set<string>()
    for (let attempt = 0; attempt < 100; attempt++) {
      const iban = candidateIban(KEY, attempt, bank)
      assert.ok(isValidIBAN(iban), iban)
      assert.match(iban, /^NL[0-9]{2}TSRA[0-9]{10}$/)
      seen.add(iban)
    }
    assert.equal(seen.size, 100)
    assert.equal(candidateIban(KEY, 0, bank), candidateIban(KEY, 0, bank))
    assert.throws(() => candidateIban(KEY, 0, { countryCode: 'NL', bankCode: 'TSRA', accountDigits: 9 }))
  })
})

describe('ABA routing numbers', () => {
  test('published routing numbers pass, altered ones fail', () => {
    for (const valid of ['021000021', '011000015', '026009593', '021214891', '110000000', '121000358']) assert.ok(isValidRoutingNumber(valid), valid)
    for (const invalid of ['021000022', '123456789', '02100002', '0210000210', 'abcdefghi', '']) assert.ok(!isValidRoutingNumber(invalid), invalid)
  })

  test('the check digit completes eight digits', () => {
    assert.equal(routingCheckDigit('02100002'), '1')
    assert.equal(routingCheckDigit('01100001'), '5')
    assert.equal(routingCheckDigit('11000000'), '0')
    for (let i = 0; i < 200; i++) {
      const first8 = String(10_000_000 + i * 4_444_447).slice(0, 8)
      assert.ok(isValidRoutingNumber(first8 + routingCheckDigit(first8)))
    }
  })

  test('account numbers: 12 digits, no leading zero, deterministic', () => {
    for (let attempt = 0; attempt < 100; attempt++) assert.match(candidateUsAccountNumber(KEY, attempt), /^[1-9][0-9]{11}$/)
    assert.equal(candidateUsAccountNumber(KEY, 5), candidateUsAccountNumber(KEY, 5))
    assert.notEqual(candidateUsAccountNumber(KEY, 5), candidateUsAccountNumber(KEY, 6))
  })
})

describe('UK modulus checks', () => {
  test('Vocalink specification examples', () => {
    assert.ok(isValidUkAccount('089999', '66374958')) // standard MOD10
    assert.ok(isValidUkAccount('107999', '88837491')) // standard MOD11
    assert.ok(!isValidUkAccount('089999', '66374959'))
    assert.ok(!isValidUkAccount('08999', '66374958'))
  })

  test('generated account numbers pass the check with their sort code', () => {
    const seen = new Set<string>()
    for (let attempt = 0; attempt < 50; attempt++) {
      const accountNumber = candidateUkAccountNumber(KEY, attempt, '089999')
      assert.match(accountNumber, /^[0-9]{8}$/)
      assert.ok(isValidUkAccount('089999', accountNumber))
      seen.add(accountNumber)
    }
    assert.equal(seen.size, 50)
  })
})

describe('payment references', () => {
  test('prefix and ten unambiguous characters', () => {
    const reference = candidatePaymentReference(KEY, 0, 'TS')
    assert.match(reference, /^TS[0-9A-HJKMNP-TV-Z]{10}$/)
    assert.equal(reference, candidatePaymentReference(KEY, 0, 'TS'))
    assert.notEqual(reference, candidatePaymentReference(KEY, 1, 'TS'))
  })
})
