import type { LedgerService } from '../modules/ledger/index.ts'
import type { QuotedMovement } from '../modules/transactions/index.ts'
import type { FlowStep } from './runner.ts'

/** A movement's data once its origin's money is held. */
export interface Reserved {
  /** The hold on the origin account, once placed. */
  holdId?: string
}

/**
 * The first step of a movement paid from one of the user's accounts (a trade, a transfer, a withdrawal): holds
 * what the origin pays, amount and fees. It runs when the transaction is created, in the same database
 * transaction, so a commit the origin cannot fund is refused and leaves nothing. Its compensation releases the
 * hold. The hold's reference is the transaction's, so it is placed once whatever the retries.
 */
export function reserveStep<D extends QuotedMovement & Reserved>(ledger: LedgerService): FlowStep<D> {
  return {
    name: 'reserve',
    async run(tx, flows) {
      const patches = new Map<string, Partial<D>>()
      for (const flow of flows) {
        const hold = await ledger.placeHold({ organizationId: flow.organizationId, accountId: flow.data.originAccountId!, amount: flow.data.originAmount, reference: `${flow.id}:hold` }, { tx })
        patches.set(flow.id, { holdId: hold.id } as Partial<D>)
      }
      return patches
    },
    async compensate(tx, flow) {
      if (flow.data.holdId !== undefined) await ledger.releaseHold({ organizationId: flow.organizationId, holdId: flow.data.holdId }, { tx })
    },
  }
}
