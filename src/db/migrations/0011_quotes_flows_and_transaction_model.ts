import { sql, type Kysely } from 'kysely'

export async function up(db: Kysely<unknown>): Promise<void> {
  // The transaction model of the API: each end has its own asset, amount and rate (a trade's ends differ), the
  // amount it was asked for (denomination) and its fees. Deposits recorded before keep their figures: one asset,
  // the same amount at both ends, at rate 1, denominated in what the destination received.
  await sql`alter table transactions
    add column origin_asset text, add column origin_amount numeric, add column origin_rate text,
    add column destination_asset text, add column destination_amount numeric, add column destination_rate text,
    add column denomination jsonb, add column fees jsonb not null default '[]'::jsonb,
    add column origin_account_id uuid, add column destination_account_id uuid,
    add column quote_id uuid, add column quoted_at timestamptz`.execute(db)
  await sql`update transactions set
    origin_asset = asset, origin_amount = amount, origin_rate = '1',
    destination_asset = asset, destination_amount = amount, destination_rate = '1',
    denomination = jsonb_build_object('asset', asset, 'amount', amount::text, 'rate', '1', 'target', 'destination'),
    destination_account_id = account_id, quoted_at = created_at`.execute(db)
  await sql`alter table transactions
    alter column origin_asset set not null, alter column origin_amount set not null, alter column origin_rate set not null,
    alter column destination_asset set not null, alter column destination_amount set not null, alter column destination_rate set not null,
    alter column denomination set not null, alter column quoted_at set not null,
    alter column network drop not null, alter column reference drop not null,
    drop column asset, drop column amount, drop column account_id,
    add constraint transactions_amounts_positive check (origin_amount > 0 and destination_amount > 0)`.execute(db)
  // A quote is executed at most once: the second commit of the same quote finds it taken, whatever the race.
  await db.schema.createIndex('transactions_quote_unique').on('transactions').columns(['organization_id', 'quote_id']).unique().where(sql.ref('quote_id'), 'is not', null).execute()
  await db.schema.createIndex('transactions_origin_account_idx').on('transactions').columns(['organization_id', 'origin_account_id', 'id']).where(sql.ref('origin_account_id'), 'is not', null).execute()
  await db.schema.createIndex('transactions_destination_account_idx').on('transactions').columns(['organization_id', 'destination_account_id', 'id']).where(sql.ref('destination_account_id'), 'is not', null).execute()
  // Velocity counts a user's recent movements.
  await db.schema.createIndex('transactions_owner_created_idx').on('transactions').columns(['organization_id', 'owner_id', 'created_at']).execute()

  // A priced offer to move money, valid until it expires and usable once: committing it stamps `used_at` in the
  // same database transaction that records the transaction.
  await db.schema
    .createTable('quotes')
    .addColumn('organization_id', 'uuid', (c) => c.notNull().references('organizations.id'))
    .addColumn('id', 'uuid', (c) => c.notNull())
    .addColumn('owner_id', 'uuid', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('origin', 'jsonb', (c) => c.notNull())
    .addColumn('destination', 'jsonb', (c) => c.notNull())
    .addColumn('origin_account_id', 'uuid')
    .addColumn('destination_account_id', 'uuid')
    .addColumn('origin_asset', 'text', (c) => c.notNull())
    .addColumn('origin_amount', 'numeric', (c) => c.notNull())
    .addColumn('origin_rate', 'text', (c) => c.notNull())
    .addColumn('destination_asset', 'text', (c) => c.notNull())
    .addColumn('destination_amount', 'numeric', (c) => c.notNull())
    .addColumn('destination_rate', 'text', (c) => c.notNull())
    .addColumn('denomination', 'jsonb', (c) => c.notNull())
    .addColumn('fees', 'jsonb', (c) => c.notNull())
    .addColumn('requirements', 'jsonb', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('used_at', 'timestamptz')
    .addPrimaryKeyConstraint('quotes_pkey', ['organization_id', 'id'])
    .addCheckConstraint('quotes_amounts_positive', sql`origin_amount > 0 and destination_amount > 0`)
    .execute()
  await db.schema.createIndex('quotes_expiry_idx').on('quotes').column('expires_at').execute()

  // Durable money flows: where each one stands (the next step to run) and what its steps recorded. A step's
  // effect and the move to the next step commit together, so a flow resumes exactly where it stopped.
  await db.schema
    .createTable('flows')
    .addColumn('organization_id', 'uuid', (c) => c.notNull().references('organizations.id'))
    .addColumn('id', 'uuid', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('step', 'integer', (c) => c.notNull())
    .addColumn('data', 'jsonb', (c) => c.notNull())
    .addColumn('error', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    .addPrimaryKeyConstraint('flows_pkey', ['organization_id', 'id'])
    .addCheckConstraint('flows_status', sql`status in ('running', 'completed', 'failed')`)
    .execute()
  // The history of each flow, written with each step's effect.
  await db.schema
    .createTable('flow_steps')
    .addColumn('organization_id', 'uuid', (c) => c.notNull())
    .addColumn('flow_id', 'uuid', (c) => c.notNull())
    .addColumn('step', 'text', (c) => c.notNull())
    .addColumn('action', 'text', (c) => c.notNull())
    // The row's place in the flow's history: runs of steps 0…k−1, then (after a failure at step k) their
    // compensations newest first, then the failure.
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('error', 'text')
    .addColumn('at', 'timestamptz', (c) => c.notNull())
    .addPrimaryKeyConstraint('flow_steps_pkey', ['organization_id', 'flow_id', 'position'])
    .addForeignKeyConstraint('flow_steps_flow_fk', ['organization_id', 'flow_id'], 'flows', ['organization_id', 'id'])
    .addCheckConstraint('flow_steps_action', sql`action in ('run', 'compensate', 'fail')`)
    .execute()

  // Deposits recorded before flows existed and not settled yet: each becomes a deposit flow at its first step,
  // and its pending settlement job the flow's job.
  await sql`insert into flows (organization_id, id, type, status, step, data, error, created_at, updated_at)
    select t.organization_id, t.id, 'deposit', 'running', 0,
      jsonb_build_object('network', t.network, 'asset', t.destination_asset), null, t.created_at, t.updated_at
    from transactions t
    where t.type = 'deposit' and t.status = 'processing'`.execute(db)
  await sql`update jobs set type = 'flow:deposit',
      payload = jsonb_build_object('organizationId', payload->>'organizationId', 'flowId', payload->>'transactionId')
    where type = 'deposit.settle' and status in ('pending', 'running')`.execute(db)
}
