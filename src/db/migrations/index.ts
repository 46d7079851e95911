import type { Migration, MigrationProvider } from 'kysely/migration'
import * as m0001 from './0001_initial.ts'
import * as m0002 from './0002_metadata_text_and_idempotency.ts'
import * as m0003 from './0003_assets_and_prices.ts'
import * as m0004 from './0004_outbox.ts'
import * as m0005 from './0005_files_and_terms.ts'
import * as m0006 from './0006_kyc_connector.ts'
import * as m0007 from './0007_kyc.ts'
import * as m0008 from './0008_ledger_and_accounts.ts'
import * as m0009 from './0009_jobs_and_transactions.ts'
import * as m0010 from './0010_deposit_methods.ts'
import * as m0011 from './0011_quotes_flows_and_transaction_model.ts'
import * as m0012 from './0012_external_accounts_and_withdrawals.ts'
import * as m0013 from './0013_card_payments.ts'
import * as m0014 from './0014_external_account_verifications.ts'
import * as m0015 from './0015_requests_for_information_and_job_wakes.ts'
import * as m0016 from './0016_portfolio.ts'
import * as m0017 from './0017_webhooks.ts'
import * as m0018 from './0018_kyc_ingestions.ts'
import * as m0019 from './0019_scheduled_jobs.ts'
import * as m0020 from './0020_rate_limits.ts'
import * as m0021 from './0021_key_rings.ts'
import * as m0022 from './0022_audit_trail.ts'
import * as m0023 from './0023_audit_trail_one_row_per_request.ts'

/** Numbered, forward-only migrations; append new ones, never edit an applied one. */
const migrations: Record<string, Migration> = {
  '0001_initial': m0001,
  '0002_metadata_text_and_idempotency': m0002,
  '0003_assets_and_prices': m0003,
  '0004_outbox': m0004,
  '0005_files_and_terms': m0005,
  '0006_kyc_connector': m0006,
  '0007_kyc': m0007,
  '0008_ledger_and_accounts': m0008,
  '0009_jobs_and_transactions': m0009,
  '0010_deposit_methods': m0010,
  '0011_quotes_flows_and_transaction_model': m0011,
  '0012_external_accounts_and_withdrawals': m0012,
  '0013_card_payments': m0013,
  '0014_external_account_verifications': m0014,
  '0015_requests_for_information_and_job_wakes': m0015,
  '0016_portfolio': m0016,
  '0017_webhooks': m0017,
  '0018_kyc_ingestions': m0018,
  '0019_scheduled_jobs': m0019,
  '0020_rate_limits': m0020,
  '0021_key_rings': m0021,
  '0022_audit_trail': m0022,
  '0023_audit_trail_one_row_per_request': m0023,
}

export const migrationProvider: MigrationProvider = {
  getMigrations: async () => migrations,
}
