import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { classicAddressToXAddress } from 'ripple-address-codec'
import { bankDestination, cryptoDestination, methodNetwork } from './destinations.ts'

describe('deposit destination keys', () => {
  test('one key per destination, whatever its spelling', () => {
    assert.equal(cryptoDestination('ethereum', '0x7E5F4552091A69125d5DfCb7b8C2659029395Bdf'), '0x7e5f4552091a69125d5dfcb7b8c2659029395bdf')
    assert.equal(cryptoDestination('bitcoin', 'TB1QW508D6QEJXTDG4Y5R3ZARVARY0C5XW7KXPJZSX'), 'tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx')
    assert.equal(cryptoDestination('bitcoin', '2MzJXEZeyJV4jMHxkeGY7x88DPpF15p78ks'), '2MzJXEZeyJV4jMHxkeGY7x88DPpF15p78ks')
    const classic = 'rHb9CJAWyB4rj91VRWn96DkukG4bwdtyTh'
    assert.equal(cryptoDestination('xrp-ledger', classic, '0012'), `${classic}#12`)
    assert.equal(cryptoDestination('xrp-ledger', classicAddressToXAddress(classic, 12, true)), `${classic}#12`)
    assert.equal(cryptoDestination('xrp-ledger', classic), classic)
    assert.equal(bankDestination({ network: 'sepa', iban: 'nl91 abna 0417 1643 00' }), 'NL91ABNA0417164300')
    assert.equal(bankDestination({ network: 'sepa', iban: 'NL92ABNA0417164300' }), undefined)
    assert.equal(bankDestination({ network: 'fps', sortCode: '089999', accountNumber: '66374958' }), '089999/66374958')
    assert.equal(bankDestination({ network: 'wire', accountNumber: '123456789012' }), '123456789012')
  })

  test('the US rails share one method', () => {
    for (const network of ['ach', 'wire', 'fednow', 'rtp']) assert.equal(methodNetwork(network), 'us')
    assert.equal(methodNetwork('sepa'), 'sepa')
    assert.equal(methodNetwork('bitcoin'), 'bitcoin')
  })
})
