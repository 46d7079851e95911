/** The scopes every deployment defines; a catalogue adds those that depend on its configuration. */
export const SCOPES = {
  'core.users:act-on-behalf-of': 'Act on behalf of users',
  'core.users:create': 'Create users',
  'core.users:read': 'Read users',
  'core.users:delete': 'Delete users',
  'core.users.metadata:read': 'Read users metadata',
  'core.users.metadata:write': 'Write users metadata',
  'core.kyc:read': 'Read KYC processes',
  'core.kyc.profile:update': 'Update the profile KYC process',
  'core.kyc.address:update': 'Update the address KYC process',
  'core.kyc.email:update': 'Update the email KYC process',
  'core.kyc.phone:update': 'Update the phone KYC process',
  'core.kyc.identity:update': 'Update the identity KYC process',
  'core.kyc.proof-of-address:update': 'Update the proof-of-address KYC process',
  'core.kyc.customer-due-diligence:update': 'Update the customer due diligence KYC process',
  'core.kyc.enhanced-due-diligence:update': 'Update the enhanced due diligence KYC process',
  'core.kyc.crypto-risk-assessment:update': 'Update the crypto risk assessment KYC process',
  'core.kyc.self-categorization-statement:update': 'Update the self-categorization statement KYC process',
  'core.kyc.tax-details:update': 'Update the tax details KYC process',
  'core.kyb:read': 'Read KYB processes',
  'core.kyb.profile:update': 'Update profile (KYB)',
  'core.kyb.documents:update': 'Update documents (KYB)',
  'core.kyb.financial-institution:update': 'Update financial institution (KYB)',
  'core.kyb.associated-persons:create': 'Create associated persons (KYB)',
  'core.kyb.associated-persons:read': 'Read associated persons (KYB)',
  'core.kyb.associated-persons:delete': 'Delete associated persons (KYB)',
  'core.kyb.associated-persons.profile:update': 'Update associated persons profile (KYB)',
  'core.kyb.associated-persons.identity:update': 'Update associated persons identity (KYB)',
  'core.kyb.associated-persons.proof-of-address:update': 'Update associated persons proof-of-address (KYB)',
  'core.kyb.attestation:trigger': 'Trigger attestation (KYB)',
  'core.capabilities:read': 'Read capabilities',
  'core.terms-of-service:read': 'Read terms of service',
  'core.terms-of-service:accept': 'Accept terms of service',
  'core.files:create': 'Create files',
  'core.files:read': 'Read files',
  'core.files.metadata:read': 'Read files metadata',
  'core.files.metadata:write': 'Write files metadata',
  'core.accounts:create': 'Create accounts',
  'core.accounts:read': 'Read accounts',
  'core.accounts:update': 'Update accounts',
  'core.accounts:archive': 'Archive accounts',
  'core.accounts:deposit-method': 'Set up and read the deposit method of accounts',
  'core.accounts:use-test-helpers': 'Use the sandbox test helpers of accounts',
  'core.accounts.metadata:read': 'Read accounts metadata',
  'core.accounts.metadata:write': 'Write accounts metadata',
  'core.assets:use-test-helpers': 'Use the sandbox test helpers of assets',
  'core.external-accounts:create': 'Create external accounts',
  'core.external-accounts:read': 'Read external accounts',
  'core.external-accounts:update': 'Update external accounts',
  'core.external-accounts:delete': 'Delete external accounts',
  'core.external-accounts.metadata:read': 'Read external accounts metadata',
  'core.external-accounts.metadata:write': 'Write external accounts metadata',
  'core.transactions:create': 'Create transactions',
  'core.transactions:read': 'Read transactions',
  'core.transactions.metadata:read': 'Read transactions metadata',
  'core.transactions.metadata:write': 'Write transactions metadata',
  'core.transactions.requests-for-information:read': 'Read requests for information of transactions',
  'core.transactions.requests-for-information:update': 'Update requests for information of transactions',
  'core.requests-for-information:read': 'Read requests for information',
  'core.requests-for-information:update': 'Update requests for information',
  'core.portfolio:read': 'Read portfolio',
  'core.statements:read': 'Read statements',
  'core.webhooks:management-link': 'Create the management link of webhooks',
  'widgets.payment.sessions:create': 'Create payment widget sessions',
  'widgets.travel-rule.sessions:create': 'Create travel-rule widget sessions',
  'widgets.kyc.sessions:create': 'Create KYC widget sessions',
  'kyc-connector.sumsub.ingestions:create': 'Create Sumsub ingestions',
  'kyc-connector.sumsub.ingestions:read': 'Read Sumsub ingestions',
  'kyc-connector.veriff.ingestions:create': 'Create Veriff ingestions',
  'kyc-connector.veriff.ingestions:read': 'Read Veriff ingestions',
} as const satisfies Record<string, string>

/** The scopes of one provider's connector configuration, as the kyc-connector API names them. */
export function kycConnectorConfigScopes(provider: string): { read: string; write: string } {
  return { read: `kyc-connector.${provider}.config:read`, write: `kyc-connector.${provider}.config:write` }
}

/**
 * Every scope this deployment defines, fixed when it starts: the constant ones and those of the configured
 * providers. A client holds a subset, or `*` for all of them; the token endpoint, the client commands, the
 * authorization server metadata and the OpenAPI document all read this one catalogue.
 */
export class ScopeCatalogue {
  /** Scope → description, in a stable order. */
  readonly descriptions: Readonly<Record<string, string>>
  readonly all: readonly string[]

  constructor(options: { kycConnectorProviders: readonly string[] }) {
    const descriptions: Record<string, string> = { ...SCOPES }
    for (const provider of options.kycConnectorProviders) {
      const scopes = kycConnectorConfigScopes(provider)
      const title = `${provider[0]!.toUpperCase()}${provider.slice(1)}`
      descriptions[scopes.read] = `Read the ${title} provider configuration`
      descriptions[scopes.write] = `Create or replace the ${title} provider configuration`
    }
    this.descriptions = Object.freeze(descriptions)
    this.all = Object.freeze(Object.keys(descriptions))
  }

  has(scope: string): boolean {
    return Object.hasOwn(this.descriptions, scope)
  }
}
