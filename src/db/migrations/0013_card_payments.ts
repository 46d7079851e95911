import type { Kysely } from 'kysely'

export async function up(db: Kysely<unknown>): Promise<void> {
  // The sandbox card processor's book of card payments, kept like an acquirer keeps them: one row per
  // authorization, found again by its idempotency key, so that a repeated request (a retry, a crash and a resume)
  // is the same payment and a capture happens once. `outcome` is what the test card or amount selected when the
  // payment was asked for; the card number itself is never written here. `id` is random: it is also the secret
  // part of the 3-D Secure challenge page's address.
  await db.schema
    .createTable('sandbox_card_payments')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('organization_id', 'uuid', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('reference', 'text', (c) => c.notNull())
    .addColumn('network', 'text', (c) => c.notNull())
    .addColumn('last_four', 'text', (c) => c.notNull())
    .addColumn('asset', 'text', (c) => c.notNull())
    .addColumn('amount', 'numeric', (c) => c.notNull())
    .addColumn('outcome', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('reason', 'text')
    .addColumn('return_url', 'text', (c) => c.notNull())
    .addColumn('challenge_expires_at', 'timestamptz')
    .addColumn('captured_amount', 'numeric', (c) => c.notNull().defaultTo('0'))
    .addColumn('refunded_amount', 'numeric', (c) => c.notNull().defaultTo('0'))
    .addColumn('operations', 'jsonb', (c) => c.notNull().defaultTo('[]'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    .addUniqueConstraint('sandbox_card_payments_key', ['organization_id', 'key'])
    .execute()
}
