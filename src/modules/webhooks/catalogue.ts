import examples from './event-examples.json' with { type: 'json' }

/** An event type endpoints may receive, what it announces, and an example of its `data`. */
export interface EventTypeEntry {
  type: string
  description: string
  /** False for a type of the reference's catalogue that Tessera never sends (what it announces does not exist here). */
  sent: boolean
  example: Record<string, unknown>
}

const KYC_PROCESSES = [
  'profile',
  'email',
  'phone',
  'address',
  'identity',
  'proof-of-address',
  'tax-details',
  'customer-due-diligence',
  'enhanced-due-diligence',
  'crypto-risk-assessment',
  'self-categorization-statement',
  'screening',
  'risk',
] as const

const DESCRIPTIONS: ReadonlyArray<[type: string, description: string, sent?: false]> = [
  ['core.user.created', 'A user was created; `data.user` is the user as `GET /core/users/{userId}` shows it.'],
  ['core.user.deleted', 'A user was deleted; `data.user` is the user as it was.'],
  ...KYC_PROCESSES.map((process): [string, string] => [
    `core.kyc.${process}.status-changed`,
    `The status of the user's ${process.replace(/-/g, ' ')} KYC process changed; \`data\` gives the new status and the user's id.`,
  ]),
  ['core.kyb.onboarding.status-changed', 'The status of a business user\'s onboarding changed. Business onboarding is not part of Tessera: never sent.', false],
  ['core.assets.cooldown-ended', 'A cooldown that kept a user from some features of some assets (a financial-promotions rule) ended.'],
  ['core.account.created', 'An account was opened; `data.account` is the account with its balance.'],
  ['core.account.balance-changed', 'A movement changed an account\'s total or available balance.'],
  ['core.account.archived', 'An account was archived.'],
  ['core.account.unarchived', 'An account was brought back from the archive. Tessera has no operation that does this: never sent.', false],
  ['core.external-account.created', 'A card, bank account or crypto address was linked.'],
  ['core.external-account.status-changed', 'A linked card changed status: it expired, or its issuer refused a payment for good (`failed`).'],
  ['core.external-account.deleted', 'A linked external account was removed.'],
  ['core.transaction.created', 'A transaction was created from a quote; `data.transaction` is the transaction.'],
  ['core.transaction.status-changed', 'A transaction changed status (completed, failed, …).'],
  ...(['sumsub', 'veriff'] as const).flatMap((provider): [string, string][] => [
    [`kyc-connector.${provider}.ingestion.created`, `A user's ${provider === 'sumsub' ? 'Sumsub' : 'Veriff'} ingestion was created (\`queued\`); \`data.ingestion\` is the ingestion.`],
    [`kyc-connector.${provider}.ingestion.status-changed`, `A ${provider === 'sumsub' ? 'Sumsub' : 'Veriff'} ingestion started or finished; \`data.ingestion\` is the ingestion with each process's outcome.`],
  ]),
  ['core.webhook-endpoint.disabled', 'Tessera: one of the organization\'s endpoints was disabled because a message to it failed every attempt.'],
]

const EXAMPLES = examples as Record<string, Record<string, unknown>>

/** Every type an endpoint may subscribe to, in the reference's order, with Tessera's own after. */
export const EVENT_CATALOGUE: readonly EventTypeEntry[] = DESCRIPTIONS.map(([type, description, sent]) => {
  const example = EXAMPLES[type]
  if (example === undefined) throw new Error(`The webhook event type ${type} has no example`)
  return { type, description, sent: sent !== false, example }
})

export const EVENT_TYPES: ReadonlySet<string> = new Set(EVENT_CATALOGUE.map((entry) => entry.type))

export const ENDPOINT_DISABLED_EVENT = 'core.webhook-endpoint.disabled'

/**
 * The body of a message: the event envelope the reference gives every webhook, around the event's `data` as stored
 * (JSON text, written as it is).
 */
export function eventEnvelope(event: { id: string; type: string; occurredAt: Date; dataJson: string }): string {
  return `{"id":${JSON.stringify(event.id)},"type":${JSON.stringify(event.type)},"createdAt":"${event.occurredAt.toISOString()}","data":${event.dataJson}}`
}
