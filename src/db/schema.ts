import type { ColumnType, Generated, Insertable, Kysely, Selectable, Transaction } from 'kysely'

/** Timestamps are written from the application clock and read back as Date. */
type Timestamp = ColumnType<Date, Date, Date>
/** jsonb columns are written as serialized JSON text and read back parsed. */
type Json<T> = ColumnType<T, string, string>

export interface OrganizationsTable {
  id: string
  name: string
  created_at: Timestamp
}

export interface ClientsTable {
  id: string
  organization_id: string
  name: string
  secret_hash: string
  /** Space-delimited scopes granted to the client, or `*` for every scope the service defines. */
  scopes: string
  created_at: Timestamp
  revoked_at: ColumnType<Date | null, Date | null | undefined, Date | null>
}

export interface UsersTable {
  organization_id: string
  id: string
  type: 'individual' | 'business'
  email: string
  /** Lower-cased email: the uniqueness key within an organization. */
  email_key: string
  profile: Json<Record<string, unknown>>
  /** User-context headers received when the user was created. */
  creation_context: Json<Record<string, string>>
  created_at: Timestamp
  updated_at: Timestamp
  deleted_at: ColumnType<Date | null, Date | null | undefined, Date | null>
  deletion_review: ColumnType<unknown, string | null | undefined, string | null>
}

export interface MetadataTable {
  organization_id: string
  entity_type: string
  entity_id: string
  data: Json<Record<string, unknown>>
  etag: string
  created_at: Timestamp
  updated_at: Timestamp
}

export interface IdempotencyKeysTable {
  organization_id: string
  client_id: string
  key: string
  /** Method and route template of the request the key was first used with. */
  operation: string
  /** Digest of the first request's body: a retry must send the same one. */
  request_hash: string
  status: 'running' | 'completed'
  response_status: ColumnType<number | null, number | null | undefined, number | null>
  response_headers: ColumnType<Record<string, string> | null, string | null | undefined, string | null>
  response_body: ColumnType<string | null, string | null | undefined, string | null>
  created_at: Timestamp
  /** Until then a running request owns the key; after it, a retry may take over (the first one died). */
  locked_until: Timestamp
  expires_at: Timestamp
}

/** A limited key's current window, shared by the API processes on PostgreSQL (src/http/rate-limit.repository.ts). */
export interface RateLimitsTable {
  key: string
  window_ends_at: Timestamp
  /** Allowance of the window leased so far, by every process together. */
  used: number
  /** What the last lease took. */
  granted: number
}

/** The USD mid of an asset for one time bucket of a resolution (`minute`, `day`, …); shared reference data. */
export interface PricePointsTable {
  asset: string
  resolution: string
  bucket_at: Timestamp
  /** numeric: read back as a decimal string. */
  usd_mid: string
  recorded_at: Timestamp
}

export interface AssetCooldownSkipsTable {
  organization_id: string
  user_id: string
  skipped_at: Timestamp
}

/** A state change a client may hear about, written in the same transaction as the change (the outbox). */
export interface OutboxEventsTable {
  /** uuidv7: sorts by when the event was recorded. */
  id: string
  organization_id: string
  /** e.g. `core.kyc.phone.status-changed`. */
  type: string
  /** What changed: `user`, `file`, `account`, … and its id. */
  subject_type: string
  subject_id: string
  /** The user the change concerns, when there is one. */
  user_id: ColumnType<string | null, string | null | undefined, never>
  data: Json<Record<string, unknown>>
  occurred_at: Timestamp
  dispatched_at: ColumnType<Date | null, Date | null | undefined, Date | null>
  /** Its number in the webhook delivery stream (bigint, as text), when endpoints subscribe to it. */
  delivery_seq: ColumnType<string | null, never, string | null>
}

/** An identity-verification provider configuration of an organization; secrets sealed (src/lib/sealing.ts). */
export interface KycConnectorConfigsTable {
  organization_id: string
  /** A provider named in KYC_CONNECTOR_PROVIDERS, e.g. `veriff`. */
  provider: string
  integrations: Json<StoredIntegration[]>
  created_at: Timestamp
  updated_at: Timestamp
}

/** A user's verification imported from a provider (src/modules/kyc-connector); see migration 0018. */
export interface KycIngestionsTable {
  organization_id: string
  id: string
  user_id: string
  provider: string
  status: 'queued' | 'running' | 'finished'
  processes: Json<string[]>
  parameters: Json<Record<string, unknown>>
  state: Json<Record<string, unknown>>
  result: ColumnType<Record<string, unknown> | null, string | null | undefined, string | null>
  started_at: ColumnType<Date | null, Date | null | undefined, Date | null>
  finished_at: ColumnType<Date | null, Date | null | undefined, Date | null>
  created_at: Timestamp
  updated_at: Timestamp
}

/** What a provider's callback names (a session, an applicant), and the unfinished ingestion waiting on it. */
export interface KycIngestionReferencesTable {
  organization_id: string
  provider: string
  reference: string
  ingestion_id: string
}

/** A user's KYC process: its status, what was submitted and what verification produced. */
export interface KycProcessesTable {
  organization_id: string
  user_id: string
  /** Process code: `phone`, `self-categorization-statement`, … */
  code: string
  status: string
  model: string
  /** How identity or proof of address was submitted: `document-submission`, `electronic-verification`. */
  type: ColumnType<string | null, string | null | undefined, string | null>
  input: ColumnType<Record<string, unknown> | null, string | null | undefined, string | null>
  output: ColumnType<Record<string, unknown> | null, string | null | undefined, string | null>
  state: Json<Record<string, unknown>>
  /** The verified value (e.g. an E.164 phone number) that no other user of the organization may verify. */
  verified_key: ColumnType<string | null, string | null | undefined, string | null>
  created_at: Timestamp
  updated_at: Timestamp
}

/** One integration as stored: `apiKey` and `sharedSecretKey` are sealed texts, never the secrets. */
export interface StoredIntegration {
  name: string
  processes: string[]
  apiKey: string
  sharedSecretKey: string
}

/** A file a user uploads: created `pending`, `uploaded` once its bytes are stored under `storage_key`. */
export interface FilesTable {
  organization_id: string
  id: string
  user_id: string
  category: string
  content_type: string
  status: 'pending' | 'uploaded'
  storage_key: ColumnType<string | null, string | null | undefined, string | null>
  /** bigint: read back as a string by the drivers, written as a number. */
  size: ColumnType<string | null, number | null | undefined, number | null>
  created_at: Timestamp
  updated_at: Timestamp
  uploaded_at: ColumnType<Date | null, Date | null | undefined, Date | null>
}

/** A user's acceptance of one terms of service. */
export interface TermsOfServiceAcceptancesTable {
  organization_id: string
  user_id: string
  code: string
  accepted_at: Timestamp
  context: Json<Record<string, string>>
}

/** A ledger account: a user's account or a system account of the organization, with its balances. */
export interface LedgerAccountsTable {
  organization_id: string
  id: string
  asset: string
  /** Null for a user's account; what the system account is for otherwise (`clearing:<network>`, `fees`, `liquidity`). */
  system_code: ColumnType<string | null, string | null | undefined, never>
  may_go_negative: ColumnType<boolean, boolean | undefined, never>
  /** numeric: read back as decimal strings. */
  total: ColumnType<string, string | undefined, string>
  available: ColumnType<string, string | undefined, string>
  closed_at: ColumnType<Date | null, Date | null | undefined, Date | null>
  created_at: Timestamp
  updated_at: Timestamp
}

export interface LedgerTransactionsTable {
  organization_id: string
  id: string
  type: string
  reference: string | null
  request_hash: string
  hold_id: string | null
  data: Json<Record<string, unknown>>
  created_at: Timestamp
}

export interface LedgerEntriesTable {
  organization_id: string
  id: string
  transaction_id: string
  account_id: string
  asset: string
  /** Signed decimal: positive credits the account. */
  amount: string
  created_at: Timestamp
}

export interface LedgerHoldsTable {
  organization_id: string
  id: string
  account_id: string
  asset: string
  amount: string
  status: 'open' | 'released' | 'captured'
  reference: string | null
  request_hash: string
  transaction_id: ColumnType<string | null, string | null | undefined, string | null>
  created_at: Timestamp
  updated_at: Timestamp
}

export interface AccountsTable {
  organization_id: string
  id: string
  owner_id: string
  label: string
  asset: string
  archived_at: ColumnType<Date | null, Date | null | undefined, Date | null>
  created_at: Timestamp
  updated_at: Timestamp
}

export interface JobsTable {
  id: string
  organization_id: string | null
  type: string
  payload: Json<Record<string, unknown>>
  status: 'pending' | 'running' | 'completed' | 'failed'
  attempts: number
  max_attempts: number
  run_at: Timestamp
  locked_until: Date | null
  locked_by: string | null
  /** How many times the job was woken (its news came): a running job woken after its claim is not deferred. */
  wakes: ColumnType<number, number | undefined, number>
  last_error: string | null
  created_at: Timestamp
  updated_at: Timestamp
  finished_at: Date | null
}

/** A recurring job (src/jobs/schedules.ts): the last period a worker scheduled it for; see migration 0019. */
export interface SchedulesTable {
  name: string
  period_start: Date
  /** bigint: read back as a string by the drivers, written as a number. */
  period_ms: ColumnType<string, number, number>
  job_id: string
  scheduled_at: Date
}

/** An upload whose bytes may be in storage while its file is not marked uploaded (src/modules/files). */
export interface FileUploadsTable {
  storage_key: string
  organization_id: string
  file_id: string
  started_at: Date
}

/** A fee of a quote or transaction, as the API shows it. */
export interface StoredFee {
  type: 'deposit' | 'exchange' | 'network' | 'withdrawal'
  code: string
  asset: string
  amount: string
  percentage?: string
}

export interface StoredDenomination {
  asset: string
  amount: string
  rate: string
  target: 'origin' | 'destination'
}

export interface TransactionsTable {
  organization_id: string
  id: string
  owner_id: string
  /** `deposit`, `trade` (two assets), `transfer` (one asset, two accounts). */
  type: string
  status: 'processing' | 'on-hold' | 'completed' | 'failed'
  reason: string | null
  origin: Json<Record<string, unknown>>
  origin_asset: string
  /** numeric: read back as a decimal string. */
  origin_amount: string
  origin_rate: string
  destination: Json<Record<string, unknown>>
  destination_asset: string
  destination_amount: string
  destination_rate: string
  denomination: Json<StoredDenomination>
  fees: Json<StoredFee[]>
  /** The user's account debited, if any. */
  origin_account_id: string | null
  /** The user's account credited, if any. */
  destination_account_id: string | null
  /** The rail network money arrived on or leaves by; null for movements inside Tessera. */
  network: string | null
  /** The rail's own id of what arrived; null for movements that did not come from a rail. */
  reference: string | null
  /** Where the money leaves to or comes from outside Tessera (`external-account:<id>`, `crypto-address:<network>:<address>[:<reference>]`); null inside Tessera. */
  counterparty: string | null
  quote_id: string | null
  quoted_at: Timestamp
  created_at: Timestamp
  updated_at: Timestamp
  completed_at: Date | null
}

export interface QuotesTable {
  organization_id: string
  id: string
  owner_id: string
  kind: string
  origin: Json<Record<string, unknown>>
  destination: Json<Record<string, unknown>>
  origin_account_id: string | null
  destination_account_id: string | null
  origin_asset: string
  origin_amount: string
  origin_rate: string
  destination_asset: string
  destination_amount: string
  destination_rate: string
  denomination: Json<StoredDenomination>
  fees: Json<StoredFee[]>
  requirements: Json<string[]>
  created_at: Timestamp
  expires_at: Timestamp
  used_at: Date | null
}

export interface FlowsTable {
  organization_id: string
  id: string
  type: string
  status: 'running' | 'completed' | 'failed'
  /** The index of the next step to run (the number of steps done). */
  step: number
  data: Json<Record<string, unknown>>
  error: string | null
  created_at: Timestamp
  updated_at: Timestamp
}

export interface FlowStepsTable {
  organization_id: string
  flow_id: string
  step: string
  action: 'run' | 'compensate' | 'fail'
  position: number
  error: string | null
  at: Timestamp
}

export interface DepositMethodsTable {
  organization_id: string
  id: string
  account_id: string
  owner_id: string
  type: 'crypto' | 'bank'
  network: string
  asset: string
  reference: string | null
  details: Json<Record<string, unknown>>
  status: 'processing' | 'ok' | 'failed'
  created_at: Timestamp
  updated_at: Timestamp
}

export interface DepositDestinationsTable {
  network: string
  destination: string
  organization_id: string
  deposit_method_id: string
}

export interface ExternalAccountsTable {
  organization_id: string
  id: string
  owner_id: string
  type: 'bank' | 'card' | 'crypto' | 'apm'
  network: string
  asset: string
  /** The rail method it uses (`bank-transfer`, `debit-card`, `credit-card`, `crypto-transaction`, an app's name). */
  method: string
  label: string
  status: 'processing' | 'ok' | 'expired' | 'failed' | 'restricted' | 'blocked'
  reason: string | null
  /** What the API shows of the account: never a card number or security code. */
  details: Json<Record<string, unknown>>
  /** A keyed hash of what identifies the account, to find the same details twice. */
  fingerprint: string
  /** Cards only: the card number, sealed. */
  sealed_number: string | null
  /** Cards only: the issuer's country, from the BIN table (null for a sandbox range issued anywhere). */
  issuer_country: string | null
  created_at: Timestamp
  updated_at: Timestamp
  deleted_at: Date | null
}

/** One verification level of a crypto external account: asked for once, completed once (docs/external-accounts.md). */
export interface ExternalAccountVerificationsTable {
  organization_id: string
  /** Also the id of its request for information. */
  id: string
  external_account_id: string
  owner_id: string
  level: 'declared' | 'verified'
  type: 'crypto-address-travel-rule' | 'crypto-address-verification'
  status: 'pending' | 'completed'
  network: string
  /** The address as the external account has it, and its one spelling on the network (for lookups). */
  address: string
  canonical_address: string
  /** What the user is offered to prove it with: a self-declaration's schema, or the message to sign. */
  proof_options: Json<Record<string, unknown>>
  /** The proof that completed it: the declared booleans, or the signature with its scheme. */
  proof: ColumnType<Record<string, unknown> | null, string | null | undefined, string | null>
  completed_at: ColumnType<Date | null, Date | null | undefined, Date | null>
  created_at: Timestamp
  updated_at: Timestamp
}

export interface SandboxRailOrdersTable {
  key: string
  order_id: string
  organization_id: string
  direction: 'payout' | 'collection'
  kind: string
  network: string
  asset: string
  amount: string
  counterparty: Json<Record<string, unknown>>
  reference: string
  status: 'completed' | 'failed' | 'rejected'
  reason: string | null
  network_reference: string | null
  received: number
  received_at: Timestamp
  settles_at: Timestamp
}

/** A capture, void or refund the sandbox card processor made, once per key. */
export interface SandboxCardOperation {
  kind: 'capture' | 'void' | 'refund'
  key: string
  id: string
  amount?: string
  at: string
}

export interface SandboxCardPaymentsTable {
  id: string
  organization_id: string
  key: string
  reference: string
  network: string
  last_four: string
  asset: string
  amount: string
  /** What the test card or amount selected: `approve`, `challenge`, `capture-decline`, or a decline reason. */
  outcome: string
  status: 'challenge' | 'authorized' | 'declined' | 'captured' | 'voided'
  reason: string | null
  return_url: string
  challenge_expires_at: Date | null
  captured_amount: Generated<string>
  refunded_amount: Generated<string>
  /** Captures, voids and refunds by key, each done once: `[{kind, key, id, amount?, at}]`. */
  operations: ColumnType<SandboxCardOperation[], string | undefined, string>
  created_at: Timestamp
  updated_at: Timestamp
}

export interface RequestsForInformationTable {
  organization_id: string
  id: string
  owner_id: string
  type: 'travel-rule'
  status: 'pending' | 'ok' | 'expired' | 'failed'
  /** The transaction it holds; null while it answers a quote not executed yet. */
  transaction_id: string | null
  quote_id: string | null
  /** What was asked: see src/modules/travel-rule. */
  context: Json<Record<string, unknown>>
  /** The answer, once accepted. */
  data: Json<Record<string, unknown>> | null
  /** Why it failed, when it did. */
  reason: string | null
  expires_at: Timestamp
  created_at: Timestamp
  updated_at: Timestamp
}

/** A user account's position: its balances and what was paid for what it holds (src/modules/portfolio). numerics as strings. */
export interface PortfolioPositionsTable {
  organization_id: string
  account_id: string
  owner_id: string
  asset: string
  total: string
  available: string
  /** The cost basis of what the account holds, in US dollars. */
  invested_usd: string
  /** With `retained_scale`: retained × 10^retained_scale is the product of what each disposal left since the epoch began. */
  retained: string
  retained_scale: number
  /** Counts the times the position was emptied. */
  epoch: number
  updated_at: Timestamp
}

/** A position as it stood at the end of a minute it changed in. */
export interface PortfolioHistoryTable {
  organization_id: string
  account_id: string
  minute_at: Timestamp
  total: string
  available: string
  invested_usd: string
  retained: string
  retained_scale: number
  epoch: number
}

/** Where an organization's events are delivered (src/modules/webhooks). */
export interface WebhookEndpointsTable {
  organization_id: string
  id: string
  url: string
  description: string
  /** The catalogue types it receives; empty for all. */
  event_types: Json<string[]>
  disabled_at: Date | null
  /** `manual` or `delivery-failing`. */
  disabled_reason: string | null
  secret_sealed: string
  previous_secret_sealed: string | null
  previous_secret_expires_at: Date | null
  secret_rotated_at: Date | null
  /** The last event of the delivery stream done for it (bigint, as text), and the failed attempts of the next one. */
  stream_seq: ColumnType<string, string, string>
  stream_attempts: ColumnType<number, number | undefined, number>
  stream_retry_at: ColumnType<Date | null, Date | null | undefined, Date | null>
  /** Every message of the endpoint (resends, replays, tests) up to this `seq` is done; bigint, read as text. */
  delivered_seq: ColumnType<string, string | undefined, string>
  created_at: Timestamp
  updated_at: Timestamp
}

/** An event to deliver to one endpoint, in `seq` order; pending while `seq` is past its endpoint's `delivered_seq`. */
export interface WebhookMessagesTable {
  organization_id: string
  id: string
  seq: ColumnType<never, never, never>
  endpoint_id: string
  event_id: string
  event_type: string
  /** `event`, `resend`, `replay` or `test`. */
  origin: string
  /** Failed attempts so far. */
  attempts: number
  next_attempt_at: Timestamp
  /** Set when it gave up after its last attempt. */
  failed_at: Date | null
  created_at: Timestamp
}

export interface WebhookAttemptsTable {
  organization_id: string
  id: string
  endpoint_id: string
  message_id: string
  event_id: string
  event_type: string
  origin: string
  attempt: number
  url: string
  succeeded: boolean
  response_status: number | null
  duration_ms: number
  response_excerpt: string
  error: string | null
  error_message: string | null
  created_at: Timestamp
}

export interface WebhookDispatcherTable {
  id: number
  dispatched_at: Date | null
}

/** A key of the deployment's key rings (src/modules/keys); its material sealed under the root key, null once retired. */
export interface KeyRingTable {
  purpose: 'sealing' | 'signing' | 'derivation'
  id: string
  status: 'active' | 'retired'
  material: string | null
  created_at: Timestamp
  activates_at: Timestamp
  retired_at: Date | null
}

export interface WebhookPortalLinksTable {
  organization_id: string
  id: string
  client_id: string
  expires_at: Timestamp
  opened_at: Date | null
  created_at: Timestamp
}

/** One write a client made through the API (src/modules/audit); append-only. */
export interface AuditTrailTable {
  id: string
  organization_id: string
  /** `client`, `widget-session` or `webhook-portal`. */
  actor: string
  client_id: string | null
  user_id: string | null
  /** The operation's id in the OpenAPI document, e.g. `core.create-user`. */
  operation: string
  method: string
  /** The route's path template, e.g. `/core/users/:userId`. */
  route: string
  object_type: string | null
  object_id: string | null
  request_id: string
  at: Date
}

export interface Database {
  organizations: OrganizationsTable
  clients: ClientsTable
  users: UsersTable
  metadata: MetadataTable
  idempotency_keys: IdempotencyKeysTable
  rate_limits: RateLimitsTable
  price_points: PricePointsTable
  asset_cooldown_skips: AssetCooldownSkipsTable
  outbox_events: OutboxEventsTable
  kyc_connector_configs: KycConnectorConfigsTable
  kyc_processes: KycProcessesTable
  kyc_ingestions: KycIngestionsTable
  kyc_ingestion_references: KycIngestionReferencesTable
  files: FilesTable
  file_uploads: FileUploadsTable
  terms_of_service_acceptances: TermsOfServiceAcceptancesTable
  ledger_accounts: LedgerAccountsTable
  ledger_transactions: LedgerTransactionsTable
  ledger_entries: LedgerEntriesTable
  ledger_holds: LedgerHoldsTable
  accounts: AccountsTable
  jobs: JobsTable
  schedules: SchedulesTable
  transactions: TransactionsTable
  deposit_methods: DepositMethodsTable
  deposit_destinations: DepositDestinationsTable
  quotes: QuotesTable
  flows: FlowsTable
  flow_steps: FlowStepsTable
  external_accounts: ExternalAccountsTable
  external_account_verifications: ExternalAccountVerificationsTable
  sandbox_rail_orders: SandboxRailOrdersTable
  sandbox_card_payments: SandboxCardPaymentsTable
  requests_for_information: RequestsForInformationTable
  portfolio_positions: PortfolioPositionsTable
  portfolio_history: PortfolioHistoryTable
  webhook_endpoints: WebhookEndpointsTable
  webhook_messages: WebhookMessagesTable
  webhook_attempts: WebhookAttemptsTable
  webhook_dispatcher: WebhookDispatcherTable
  webhook_portal_links: WebhookPortalLinksTable
  key_ring: KeyRingTable
  audit_trail: AuditTrailTable
}

export type Db = Kysely<Database>
export type Tx = Transaction<Database>
/** A database handle a repository function runs in: the pool or an open transaction. */
export type Executor = Db | Tx

export type AuditTrailRow = Selectable<AuditTrailTable>
export type ClientRow = Selectable<ClientsTable>
export type UserRow = Selectable<UsersTable>
export type NewUserRow = Insertable<UsersTable>
export type MetadataRow = Selectable<MetadataTable>
export type IdempotencyKeyRow = Selectable<IdempotencyKeysTable>
export type Generatedless<T> = T extends Generated<infer U> ? U : T
export type OutboxEventRow = Selectable<OutboxEventsTable>
export type KycConnectorConfigRow = Selectable<KycConnectorConfigsTable>
export type KeyRingRow = Selectable<KeyRingTable>
export type KycProcessRow = Selectable<KycProcessesTable>
export type KycIngestionRow = Selectable<KycIngestionsTable>
export type FileRow = Selectable<FilesTable>
export type LedgerAccountRow = Selectable<LedgerAccountsTable>
export type LedgerTransactionRow = Selectable<LedgerTransactionsTable>
export type LedgerHoldRow = Selectable<LedgerHoldsTable>
export type AccountRow = Selectable<AccountsTable>
export type JobRow = Selectable<JobsTable>
export type WebhookEndpointRow = Selectable<WebhookEndpointsTable>
export type WebhookMessageRow = Selectable<WebhookMessagesTable>
export type WebhookAttemptRow = Selectable<WebhookAttemptsTable>
export type TransactionRow = Selectable<TransactionsTable>
export type DepositMethodRow = Selectable<DepositMethodsTable>
export type QuoteRow = Selectable<QuotesTable>
export type FlowRow = Selectable<FlowsTable>
export type ExternalAccountRow = Selectable<ExternalAccountsTable>
export type ExternalAccountVerificationRow = Selectable<ExternalAccountVerificationsTable>
export type SandboxRailOrderRow = Selectable<SandboxRailOrdersTable>
export type SandboxCardPaymentRow = Selectable<SandboxCardPaymentsTable>
export type RequestForInformationRow = Selectable<RequestsForInformationTable>
export type PortfolioPositionRow = Selectable<PortfolioPositionsTable>
export type PortfolioHistoryRow = Selectable<PortfolioHistoryTable>
