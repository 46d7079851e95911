import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { isFinal, nextStatus, TRANSACTION_KINDS, type TransactionEvent, type TransactionKind, type TransactionState } from './transaction.machine.ts'

const STATES: TransactionState[] = ['processing', 'on-hold', 'completed', 'failed']
const EVENTS: TransactionEvent[] = ['settle', 'fail', 'hold', 'release']

/** Every move allowed, per kind; anything else is refused. */
const ALLOWED: Record<TransactionKind, string[]> = {
  deposit: ['processing settle completed', 'processing fail failed', 'processing hold on-hold', 'on-hold release processing', 'on-hold fail failed'],
  trade: ['processing settle completed', 'processing fail failed'],
  transfer: ['processing settle completed', 'processing fail failed'],
  withdrawal: ['processing settle completed', 'processing fail failed', 'processing hold on-hold', 'on-hold release processing', 'on-hold fail failed'],
}

describe('transaction state machine', () => {
  for (const kind of TRANSACTION_KINDS) {
    test(`${kind}: exactly the listed moves are allowed`, () => {
      const seen: string[] = []
      for (const from of STATES) {
        for (const event of EVENTS) {
          const to = nextStatus(kind, from, event)
          if (to !== null) seen.push(`${from} ${event} ${to}`)
        }
      }
      assert.deepEqual(seen.sort(), [...ALLOWED[kind]].sort())
    })
  }

  test('final states allow no move at all', () => {
    for (const kind of TRANSACTION_KINDS) {
      for (const from of STATES.filter(isFinal)) {
        for (const event of EVENTS) assert.equal(nextStatus(kind, from, event), null, `${kind} ${from} ${event}`)
      }
    }
    assert.deepEqual(STATES.filter(isFinal), ['completed', 'failed'])
  })
})
