import assert from 'node:assert/strict'
import { test } from 'node:test'
import BigNumber from 'bignumber.js'
import { DomainError } from '../../lib/errors.ts'
import { applyDelta, captureDelta, checkBalanced, lockOrder, parseAmount, postingDeltas, requestDigest } from './ledger.rules.ts'

const n = (value: string) => new BigNumber(value)

function assertDomainError(fn: () => unknown, code: string, rule?: string) {
  assert.throws(fn, (error: unknown) => {
    assert.ok(error instanceof DomainError, String(error))
    assert.equal(error.code, code)
    if (rule !== undefined) assert.equal(error.details?.rule, rule)
    return true
  })
}

test('amounts are exact decimals, never rounded, never beyond the asset decimals', () => {
  assert.equal(parseAmount('12.50', 2).toFixed(), '12.5')
  assert.equal(parseAmount('0.00000001', 8).toFixed(), '0.00000001')
  assert.equal(parseAmount('123456789012345678901234567890', 0).toFixed(), '123456789012345678901234567890')
  assertDomainError(() => parseAmount('0.001', 2), 'transaction_amount_invalid', 'decimal-places')
  assertDomainError(() => parseAmount('0.123456789', 8), 'transaction_amount_invalid', 'decimal-places')
  for (const bad of ['', '-1', '+1', '1e3', '1.', '.5', '01', ' 1', '1,5', 'NaN', 'Infinity', '0x10', '9'.repeat(39)]) {
    assertDomainError(() => parseAmount(bad, 8), 'transaction_amount_invalid', 'format')
  }
  assertDomainError(() => parseAmount('0', 2), 'transaction_amount_invalid', 'positive')
  assertDomainError(() => parseAmount('0.00', 2), 'transaction_amount_invalid', 'positive')
})

test('a posting balances per asset or is refused', () => {
  checkBalanced([
    { accountId: 'a', asset: 'BTC', amount: n('-0.1') },
    { accountId: 'b', asset: 'BTC', amount: n('0.09') },
    { accountId: 'c', asset: 'BTC', amount: n('0.01') },
  ])
  checkBalanced([
    { accountId: 'a', asset: 'BTC', amount: n('-1') },
    { accountId: 'b', asset: 'BTC', amount: n('1') },
    { accountId: 'c', asset: 'EUR', amount: n('-5') },
    { accountId: 'd', asset: 'EUR', amount: n('5') },
  ])
  assertDomainError(() => checkBalanced([{ accountId: 'a', asset: 'BTC', amount: n('-1') }, { accountId: 'b', asset: 'EUR', amount: n('1') }]), 'operation_not_allowed')
  assert.throws(() => checkBalanced([{ accountId: 'a', asset: 'BTC', amount: n('-1') }, { accountId: 'b', asset: 'BTC', amount: n('0.99999999') }]), /does not balance in BTC/)
  assert.throws(() => checkBalanced([{ accountId: 'a', asset: 'BTC', amount: n('0') }, { accountId: 'b', asset: 'BTC', amount: n('0') }]), /zero/)
  assert.throws(() => checkBalanced([{ accountId: 'a', asset: 'BTC', amount: n('1') }]), /two legs/)
})

test('available may not drop below zero; credits always go through', () => {
  const account = { id: 'a', total: n('10'), available: n('4'), mayGoNegative: false }
  assert.deepEqual(applyDelta(account, { total: n('-4'), available: n('-4') }), { total: n('6'), available: n('0') })
  assertDomainError(() => applyDelta(account, { total: n('-4.01'), available: n('-4.01') }), 'insufficient_balance')
  assertDomainError(() => applyDelta(account, { total: n('0'), available: n('-5') }), 'insufficient_balance')
  const short = { id: 'b', total: n('-1'), available: n('-1'), mayGoNegative: false }
  assert.deepEqual(applyDelta(short, { total: n('0.5'), available: n('0.5') }), { total: n('-0.5'), available: n('-0.5') })
  const clearing = { id: 'c', total: n('0'), available: n('0'), mayGoNegative: true }
  assert.deepEqual(applyDelta(clearing, { total: n('-100'), available: n('-100') }), { total: n('-100'), available: n('-100') })
  assert.throws(() => applyDelta(account, { total: n('0'), available: n('7') }), /more available than in total/)
})

test('a capture debits the total and frees what was held beyond it', () => {
  assert.deepEqual(captureDelta(n('10'), n('10')), { total: n('-10'), available: n('0') })
  assert.deepEqual(captureDelta(n('10'), n('7.5')), { total: n('-7.5'), available: n('2.5') })
  assertDomainError(() => captureDelta(n('10'), n('10.01')), 'transaction_amount_invalid', 'exceeds-hold')
})

test('legs on the same account add up', () => {
  const deltas = postingDeltas([
    { accountId: 'a', asset: 'BTC', amount: n('-1') },
    { accountId: 'a', asset: 'BTC', amount: n('0.25') },
    { accountId: 'b', asset: 'BTC', amount: n('0.75') },
  ])
  assert.deepEqual(deltas.get('a'), { total: n('-0.75'), available: n('-0.75') })
  assert.deepEqual(deltas.get('b'), { total: n('0.75'), available: n('0.75') })
})

test('locks are taken in one order, once per account', () => {
  assert.deepEqual(lockOrder(['c', 'a', 'b', 'a']), ['a', 'b', 'c'])
  const ids = ['0190a8c1-0000-7000-8000-00000000000f', '0190a8c1-0000-7000-8000-00000000000a', '0190a8c1-0000-7000-8000-000000000009']
  assert.deepEqual(lockOrder(ids), [ids[2], ids[1], ids[0]])
})

test('a request digest tells equal requests from different ones', () => {
  assert.equal(requestDigest({ a: 1, b: ['x'] }), requestDigest({ a: 1, b: ['x'] }))
  assert.notEqual(requestDigest({ a: 1 }), requestDigest({ a: 2 }))
})
