import type { Db, KycConnectorConfigRow, StoredIntegration } from '../../db/schema.ts'
import type { Principal } from '../../http/principal.ts'
import { DomainError, requestInvalid } from '../../lib/errors.ts'
import type { Sealer } from '../../lib/sealing.ts'
import { connectorSecretContext } from './kyc-connector.sealed.ts'
import { auditObject } from '../audit/index.ts'
import { recordEvent } from '../events/index.ts'
import * as repository from './kyc-connector.repository.ts'
import { duplicateNameViolations, maskSecret, missingSecretViolations } from './kyc-connector.rules.ts'
import type { KycProcess, SetProviderConfigBody } from './kyc-connector.schemas.ts'

/** An integration with its secrets in clear: for the server's own calls to the provider, never for a response. */
export interface ProviderIntegration {
  name: string
  apiKey: string
  sharedSecretKey: string
  processes: KycProcess[]
}

/** A configuration as the API shows it: secrets hidden. */
export interface ProviderConfigView {
  integrations: { name: string; apiKey: string; sharedSecretKey: string; processes: KycProcess[] }[]
  createdAt: string
  updatedAt: string
}

type SecretField = 'apiKey' | 'sharedSecretKey'

function configNotFound(): DomainError {
  return new DomainError('entity_not_found', 'The provider config cannot be found', { details: { entity: 'provider-config' } })
}

/**
 * Each organization's configuration of the identity-verification providers named in KYC_CONNECTOR_PROVIDERS:
 * the integrations (credentials and the KYC processes they perform) Tessera uses to call the provider.
 * Secrets are sealed before they reach the database and leave this service only masked, except through
 * `integrationsFor`, which the provider layer calls on the server.
 */
export class KycConnectorService {
  readonly providers: readonly string[]
  private readonly db: Db
  private readonly sealer: Sealer

  constructor(deps: { db: Db; sealer: Sealer; providers: readonly string[] }) {
    this.db = deps.db
    this.sealer = deps.sealer
    this.providers = [...deps.providers]
  }

  private requireProvider(provider: string): void {
    // Routes exist only for configured providers; this guards callers inside the process.
    if (!this.providers.includes(provider)) throw new DomainError('route_not_found', `No identity-verification provider '${provider}' is configured`)
  }

  /** What binds a sealed secret to its place: sealed for one integration, it opens nowhere else. */
  private context(organizationId: string, provider: string, name: string, field: SecretField): string[] {
    return connectorSecretContext(organizationId, provider, name, field)
  }

  private unseal(row: KycConnectorConfigRow, integration: StoredIntegration): ProviderIntegration {
    const open = (field: SecretField) => this.sealer.open(integration[field], this.context(row.organization_id, row.provider, integration.name, field))
    return { name: integration.name, apiKey: open('apiKey'), sharedSecretKey: open('sharedSecretKey'), processes: integration.processes as KycProcess[] }
  }

  private view(row: KycConnectorConfigRow): ProviderConfigView {
    return {
      integrations: row.integrations.map((stored) => {
        const integration = this.unseal(row, stored)
        return {
          name: integration.name,
          apiKey: maskSecret(integration.apiKey),
          sharedSecretKey: maskSecret(integration.sharedSecretKey),
          processes: integration.processes,
        }
      }),
      createdAt: row.created_at.toISOString(),
      updatedAt: row.updated_at.toISOString(),
    }
  }

  async getConfig(principal: Principal, provider: string): Promise<ProviderConfigView> {
    this.requireProvider(provider)
    const row = await repository.findConfig(this.db, { organizationId: principal.organizationId, provider })
    if (!row) throw configNotFound()
    return this.view(row)
  }

  /**
   * Creates or replaces the configuration. An integration that omits a secret keeps the one it has under the
   * same name; every secret given is sealed anew.
   */
  async setConfig(principal: Principal, provider: string, body: SetProviderConfigBody): Promise<ProviderConfigView> {
    this.requireProvider(provider)
    const duplicates = duplicateNameViolations(body.integrations)
    if (duplicates.length > 0) throw requestInvalid('body', duplicates)
    const key = { organizationId: principal.organizationId, provider }
    auditObject('kyc-connector-config', provider)

    const row = await this.db.transaction().execute(async (tx) => {
      const existing = await repository.findConfig(tx, key, { lock: true })
      const current = new Map((existing?.integrations ?? []).map((integration) => [integration.name, integration]))
      const missing = missingSecretViolations(body.integrations, new Set(current.keys()))
      if (missing.length > 0) throw requestInvalid('body', missing)

      const integrations: StoredIntegration[] = body.integrations.map((input) => {
        const sealed = (field: SecretField): string => {
          const given = input[field]
          if (given !== undefined) return this.sealer.seal(given, this.context(key.organizationId, provider, input.name, field))
          // Sealed for this organization, provider, name and field, so it stays valid where it is kept.
          return current.get(input.name)![field]
        }
        return { name: input.name, processes: [...input.processes], apiKey: sealed('apiKey'), sharedSecretKey: sealed('sharedSecretKey') }
      })
      const saved = await repository.upsertConfig(tx, key, integrations, new Date())
      await recordEvent(tx, {
        organizationId: key.organizationId,
        type: `kyc-connector.${provider}.config.updated`,
        subject: { type: 'provider-config', id: provider },
        // What changed, never a secret (not even masked): events leave the service in webhooks.
        data: { provider, integrations: integrations.map(({ name, processes }) => ({ name, processes })) },
      })
      return saved
    })
    return this.view(row)
  }

  /**
   * The provider's integrations of an organization with their secrets in clear, for the server's own calls to
   * the provider; null when the organization has not configured it. Never expose the result over HTTP.
   */
  async integrationsFor(organizationId: string, provider: string): Promise<ProviderIntegration[] | null> {
    if (!this.providers.includes(provider)) throw new Error(`No identity-verification provider '${provider}' is configured`)
    const row = await repository.findConfig(this.db, { organizationId, provider })
    return row ? row.integrations.map((integration) => this.unseal(row, integration)) : null
  }
}
