import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { isValidIBAN } from 'ibantools'
import { isValidRoutingNumber, isValidUkAccount } from '../../lib/bank-numbers.ts'
import type { IncomingBankPayment, IncomingChainTransfer } from './rails.ts'
import { SandboxBankRail, SandboxChainRail } from './sandbox.ts'

describe('sandbox bank rail', () => {
  const rail = new SandboxBankRail()

  test('a sender is completed with valid numbers at a sandbox bank; what the tester gave is kept', () => {
    const sepa = rail.remitter('sepa', { name: 'Ann' })
    assert.equal(sepa.name, 'Ann')
    assert.ok(isValidIBAN(sepa.iban!) && sepa.iban!.startsWith('NL'), sepa.iban)
    assert.equal(sepa.bic, 'TSRBNL20')
    assert.deepEqual(rail.remitter('sepa', { name: 'Ann', iban: 'NL91ABNA0417164300', bic: 'ABNANL2A' }), { name: 'Ann', bic: 'ABNANL2A', iban: 'NL91ABNA0417164300' })

    const fps = rail.remitter('fps', { name: 'Ann', sortCode: '089999' })
    assert.equal(fps.sortCode, '089999')
    assert.ok(isValidUkAccount(fps.sortCode!, fps.accountNumber!))
    assert.ok(isValidUkAccount(rail.remitter('fps', { name: 'Ann' }).sortCode!, rail.remitter('fps', { name: 'Ann' }).accountNumber!))

    const ach = rail.remitter('ach', { name: 'Ann', secCode: 'PPD' })
    assert.ok(isValidRoutingNumber(ach.routingNumber!))
    assert.match(ach.accountNumber!, /^[1-9][0-9]{9}$/)
    assert.deepEqual({ ...ach, accountNumber: undefined }, { name: 'Ann', accountNumber: undefined, routingNumber: '220000000', secCode: 'PPD', transactionType: 'Push', serviceType: 'SameDay' })
    assert.deepEqual(Object.keys(rail.remitter('rtp', { name: 'Ann' })), ['name', 'accountNumber', 'routingNumber'])
    assert.deepEqual(rail.remitter('wire', { name: 'Ann', address1: '1 Main St', idCode: undefined }), { name: 'Ann', address1: '1 Main St' }, 'a wire makes nothing up')
  })

  test('a payment is delivered with an id of its own; the handler\'s refusal reaches the sender', async () => {
    const delivered: IncomingBankPayment[] = []
    const bank = new SandboxBankRail()
    await assert.rejects(bank.send({ organizationId: 'org', recipient: { network: 'wire', accountNumber: '1234' }, asset: 'USD', amount: '1', remitter: { name: 'Ann' } }))
    bank.onPayment(async (payment) => {
      if (payment.amount === '0') throw new Error('refused')
      delivered.push(payment)
    })
    const sent = await bank.send({ organizationId: 'org', recipient: { network: 'wire', accountNumber: '1234' }, asset: 'USD', amount: '1', remitter: { name: 'Ann' } })
    const again = await bank.send({ organizationId: 'org', recipient: { network: 'wire', accountNumber: '1234' }, asset: 'USD', amount: '1', remitter: { name: 'Ann' } })
    assert.deepEqual(delivered, [sent, again])
    assert.notEqual(sent.id, again.id)
    await assert.rejects(bank.send({ organizationId: 'org', recipient: { network: 'wire', accountNumber: '1234' }, asset: 'USD', amount: '0', remitter: { name: 'Ann' } }), /refused/)
  })
})

describe('sandbox chain rail', () => {
  test('a transfer is delivered with an id of its own', async () => {
    const delivered: IncomingChainTransfer[] = []
    const chain = new SandboxChainRail()
    chain.onTransfer(async (transfer) => {
      delivered.push(transfer)
    })
    const sent = await chain.send({ organizationId: 'org', network: 'bitcoin', address: 'tb1q', asset: 'BTC', amount: '0.1', senders: [] })
    assert.deepEqual(delivered, [sent])
    assert.ok(sent.id.length > 0)
  })
})
