import { isUniqueViolation } from '../../db/errors.ts'
import type { DepositMethodRow, Db, Executor } from '../../db/schema.ts'
import type { Principal } from '../../http/principal.ts'
import { candidateIban, candidatePaymentReference, candidateUkAccountNumber, candidateUsAccountNumber, ibanOf, isValidRoutingNumber } from '../../lib/bank-numbers.ts'
import { DomainError } from '../../lib/errors.ts'
import { uuidv7 } from '../../lib/ids.ts'
import type { BankRecipient } from '../../providers/rails/rails.ts'
import type { Account } from '../accounts/index.ts'
import { auditObject } from '../audit/index.ts'
import type { Chain, NetworksService, Rail, RailsService } from '../reference/index.ts'
import { candidateDestinationTag, derivedAddress, deriveKey, xrpAddress } from './deposit-addresses.ts'
import * as repository from './deposit-methods.repository.ts'
import { US_RAILS, type DepositBanks, type DepositBanksFile, type DepositMethod, type DepositMethodDetails, type DepositMethodQuery } from './deposit-methods.schemas.ts'
import { bankDestination, cryptoDestination, methodNetwork } from './destinations.ts'

export interface DepositAccounts {
  /** An active account of the acting user; throws 404 `entity_not_found` (`account`) otherwise. */
  get(principal: Principal, accountId: string): Promise<Account>
  /** An account of the user, archived or not, read with `executor`; undefined when the user has no such account. */
  find(executor: Executor, organizationId: string, ownerId: string, accountId: string): Promise<{ archived: boolean } | undefined>
}

export interface DepositUsers {
  declared(organizationId: string, userId: string): Promise<{ email: string; profile: { fullName?: string; name?: string } } | null>
}

/** A deposit's destination as the payer gave it. */
export type IncomingDestination = ({ type: 'crypto'; network: string; address: string; reference?: string }) | ({ type: 'bank' } & BankRecipient)

/** The deposit method, and the account owning it, that an incoming deposit's destination names. */
export interface ResolvedDestination {
  depositMethodId: string
  accountId: string
  ownerId: string
  asset: string
}

// Candidates are drawn from a space of at least 10^8 numbers: twenty taken in a row would take a broken generator.
const MAX_ATTEMPTS = 20

/**
 * Deposit methods: the address or bank account through which an account receives from outside. Every method
 * is derived from the deployment's secret and the account, recorded with each form it receives under, and
 * never given to another account.
 */
export class DepositMethodsService {
  private readonly db: Db
  private readonly accounts: DepositAccounts
  private readonly users: DepositUsers
  private readonly rails: RailsService
  private readonly networks: NetworksService
  private readonly secret: Uint8Array
  private readonly chain: Chain
  private readonly banks: DepositBanks
  private readonly banksUsable: boolean

  constructor(deps: {
    db: Db
    accounts: DepositAccounts
    users: DepositUsers
    rails: RailsService
    networks: NetworksService
    /** The deployment's 32-byte secret (base64): only ever HKDF input, never used as a key itself. */
    secret: string
    banks: DepositBanksFile
    environment: 'sandbox' | 'production'
  }) {
    this.db = deps.db
    this.accounts = deps.accounts
    this.users = deps.users
    this.rails = deps.rails
    this.networks = deps.networks
    this.secret = new Uint8Array(Buffer.from(deps.secret, 'base64'))
    this.chain = deps.networks.deploymentChain
    this.banks = deps.banks.banks
    // Numbers at the shipped sandbox bank would receive nothing in production.
    this.banksUsable = deps.environment === 'sandbox' || !deps.banks.sandbox
    checkBanks(this.banks)
  }

  async get(principal: Principal, accountId: string, query: DepositMethodQuery): Promise<DepositMethod> {
    const account = await this.accounts.get(principal, accountId)
    this.checkRail(account, query)
    const row = await repository.findForAccount(this.db, principal.organizationId, account.id, methodNetwork(query.network))
    if (!row) {
      throw new DomainError('entity_not_found', 'A deposit method for the specified type, asset and network cannot be found', { details: { entity: 'depositMethod' } })
    }
    return this.present(await this.provision(row), query.network)
  }

  /** Issues the account's deposit method for the network, or returns the one it has (`created: false`). */
  async setup(principal: Principal, accountId: string, query: DepositMethodQuery): Promise<{ created: boolean; depositMethod: DepositMethod }> {
    const account = await this.accounts.get(principal, accountId)
    const rail = this.checkRail(account, query)
    const network = methodNetwork(query.network)
    const existing = await repository.findForAccount(this.db, principal.organizationId, account.id, network)
    if (existing) return { created: false, depositMethod: this.present(await this.provision(existing), query.network) }

    const beneficiary = query.type === 'bank' ? await this.beneficiary(principal.organizationId, account.ownerId) : ''
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const candidate = this.candidate(principal.organizationId, account, rail, beneficiary, attempt)
      if (await repository.takenDestinations(this.db, network, candidate.destinations)) continue
      if (query.type === 'bank' && candidate.reference !== null && (await repository.referenceTaken(this.db, network, candidate.reference))) continue
      const now = new Date()
      const id = uuidv7(now.getTime())
      auditObject('deposit-method', id)
      const row: DepositMethodRow = {
        organization_id: principal.organizationId,
        id,
        account_id: account.id,
        owner_id: account.ownerId,
        type: query.type,
        network,
        asset: account.asset,
        reference: candidate.reference,
        details: candidate.details as unknown as Record<string, unknown>,
        status: 'processing',
        created_at: now,
        updated_at: now,
      }
      try {
        await this.db.transaction().execute((tx) => repository.insert(tx, row, candidate.destinations))
        return { created: true, depositMethod: this.present(row, query.network) }
      } catch (error) {
        // The same request twice at once: the other one issued it.
        if (isUniqueViolation(error, 'deposit_methods_account_network_unique')) {
          const winner = await repository.findForAccount(this.db, principal.organizationId, account.id, network)
          if (winner) return { created: false, depositMethod: this.present(await this.provision(winner), query.network) }
        }
        // Another account took the same number between the check and the insert: draw the next one.
        if (isUniqueViolation(error, 'deposit_destinations_pkey') || isUniqueViolation(error, 'deposit_methods_bank_reference_unique')) continue
        throw error
      }
    }
    throw new Error(`No free ${network} deposit destination after ${MAX_ATTEMPTS} attempts`)
  }

  /**
   * The deposit method an incoming deposit's destination names, within the organization, and the account that
   * owns it; undefined when none does (or its account is archived). A `processing` method already receives:
   * its numbers are reserved from the moment they are issued.
   */
  async resolveDestination(executor: Executor, organizationId: string, destination: IncomingDestination): Promise<ResolvedDestination | undefined> {
    let key: string | undefined
    let network: string
    if (destination.type === 'crypto') {
      const family = this.networks.addressFamily(destination.network)
      if (family === undefined) return undefined
      network = destination.network
      key = cryptoDestination(family, destination.address, destination.reference)
    } else {
      network = methodNetwork(destination.network)
      key = bankDestination(destination)
    }
    if (key === undefined) return undefined
    const found = await repository.findByDestination(executor, organizationId, network, key)
    if (!found || found.status === 'failed') return undefined
    if (destination.type === 'bank' && 'routingNumber' in destination && destination.routingNumber !== undefined) {
      if ((found.details as { routingNumber?: string }).routingNumber !== destination.routingNumber) return undefined
    }
    const account = await this.accounts.find(executor, organizationId, found.ownerId, found.accountId)
    if (!account || account.archived) return undefined
    return { depositMethodId: found.depositMethodId, accountId: found.accountId, ownerId: found.ownerId, asset: found.asset }
  }

  /** The rail of the request; the asset must be the account's own. */
  private checkRail(account: Account, query: DepositMethodQuery): Rail {
    const rail = this.rails.list({ type: [query.type], network: [query.network], asset: [query.asset] })[0]
    if (!rail) throw new DomainError('entity_not_found', 'A rail for the specified type, asset and network cannot be found', { details: { entity: 'rail' } })
    if (!rail.features.includes('deposit')) {
      throw new DomainError('rail_feature_not_available', 'The \'deposit\' feature is not available for the rail', { details: { feature: 'deposit' } })
    }
    if (query.asset !== account.asset) {
      // Depositing another asset would be a conversion on arrival, which deposit methods do not offer.
      throw new DomainError('asset_not_supported', 'Deposits into this account must be in the account\'s asset', { details: { context: 'query', property: 'asset' } })
    }
    if (query.type === 'bank' && (!this.banksUsable || this.banks[methodNetwork(query.network) as keyof DepositBanks] === undefined)) {
      throw new DomainError('rail_feature_not_available', 'Bank deposits over this network are not set up on this deployment', { details: { feature: 'deposit' } })
    }
    return rail
  }

  private candidate(organizationId: string, account: Account, rail: Rail, beneficiary: string, attempt: number): { details: DepositMethodDetails; reference: string | null; destinations: string[] } {
    const asset = account.asset
    if (rail.type === 'crypto') {
      const family = this.networks.addressFamily(rail.network)!
      if (family === 'xrp-ledger') {
        // One address per organization; the destination tag tells its accounts apart (see docs/deposit-methods.md).
        const { address, formats } = xrpAddress(deriveKey(this.secret, 'deposit-address', [organizationId, rail.network]))
        const tag = candidateDestinationTag(deriveKey(this.secret, 'destination-tag', [organizationId, account.id, rail.network]), attempt)
        return {
          details: { network: rail.network, asset, address, addressFormats: formats, reference: tag },
          reference: tag,
          destinations: [cryptoDestination(family, address, tag)],
        }
      }
      const parts = [organizationId, account.id, rail.network, ...(attempt === 0 ? [] : [String(attempt)])]
      const { address, formats } = derivedAddress(family, this.chain, deriveKey(this.secret, 'deposit-address', parts))
      return {
        details: { network: rail.network, asset, address, addressFormats: formats },
        reference: null,
        destinations: [...new Set(formats.map((format) => cryptoDestination(family, format.value)))],
      }
    }

    const network = methodNetwork(rail.network)
    const key = deriveKey(this.secret, 'bank-numbers', [organizationId, account.id, network])
    if (network === 'sepa') {
      const bank = this.banks.sepa!
      const iban = candidateIban(key, attempt, { countryCode: bank.ibanCountry, bankCode: bank.bankCode, accountDigits: bank.accountDigits })
      const reference = candidatePaymentReference(key, attempt, bank.referencePrefix)
      return {
        details: { network: 'sepa', asset, beneficiary, bankName: bank.bankName, bankAddress: bank.bankAddress, bic: bank.bic, iban, reference },
        reference,
        destinations: [iban],
      }
    }
    if (network === 'fps') {
      const bank = this.banks.fps!
      const accountNumber = candidateUkAccountNumber(key, attempt, bank.sortCode)
      const reference = candidatePaymentReference(key, attempt, bank.referencePrefix)
      return {
        details: { network: 'fps', asset, beneficiary, bankName: bank.bankName, bankAddress: bank.bankAddress, sortCode: bank.sortCode, accountNumber, reference },
        reference,
        destinations: [bankDestination({ network: 'fps', sortCode: bank.sortCode, accountNumber })!],
      }
    }
    const bank = this.banks.us!
    const accountNumber = candidateUsAccountNumber(key, attempt)
    return {
      // The network is filled in when shown: the same account receives on every US rail.
      details: { asset, beneficiary, bankName: bank.bankName, bankAddress: bank.bankAddress, routingNumber: bank.routingNumber, accountNumber, accountType: 'checking' } as unknown as DepositMethodDetails,
      reference: null,
      destinations: [accountNumber],
    }
  }

  private async beneficiary(organizationId: string, userId: string): Promise<string> {
    const user = await this.users.declared(organizationId, userId)
    return user?.profile.fullName ?? user?.profile.name ?? user?.email ?? 'Account holder'
  }

  /**
   * Provisioning: a method is issued `processing` and is `ok` from the next time it is read. Issuing is all
   * the work there is (the numbers are derived and reserved at once), so the second read is where it shows.
   */
  private async provision(row: DepositMethodRow): Promise<DepositMethodRow> {
    if (row.status !== 'processing') return row
    return (await repository.markProvisioned(this.db, row.organization_id, row.id, new Date())) ?? { ...row, status: 'ok' }
  }

  private present(row: DepositMethodRow, requestedNetwork: string): DepositMethod {
    let details = row.details as unknown as DepositMethodDetails
    if (row.network === 'us') {
      const network = requestedNetwork as (typeof US_RAILS)[number]
      const secondaryNetworks = US_RAILS.filter(
        (other) => other !== network && this.rails.list({ type: ['bank'], network: [other], asset: [row.asset] }).some((rail) => rail.features.includes('deposit')),
      )
      details = { network, ...(details as object), ...(secondaryNetworks.length > 0 ? { secondaryNetworks } : {}) } as DepositMethodDetails
    }
    return { type: row.type, status: row.status, details }
  }
}

/** The bank settings must make valid numbers: a mistake stops the start rather than issuing bad details. */
function checkBanks(banks: DepositBanks): void {
  const problems: string[] = []
  if (banks.us && !isValidRoutingNumber(banks.us.routingNumber)) problems.push(`us.routingNumber ${banks.us.routingNumber} fails the ABA checksum`)
  if (banks.sepa && ibanOf(banks.sepa.ibanCountry, `${banks.sepa.bankCode}${'0'.repeat(banks.sepa.accountDigits)}`) === undefined) {
    problems.push(`sepa: bank code ${banks.sepa.bankCode} with ${banks.sepa.accountDigits} account digits does not make ${banks.sepa.ibanCountry} IBANs`)
  }
  if (problems.length > 0) throw new Error(`Invalid deposit-banks.json:\n${problems.map((p) => `  - ${p}`).join('\n')}`)
}
