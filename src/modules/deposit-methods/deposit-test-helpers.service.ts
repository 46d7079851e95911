import { randomBytes } from 'node:crypto'
import type { Db } from '../../db/schema.ts'
import type { Principal } from '../../http/principal.ts'
import { DomainError } from '../../lib/errors.ts'
import { uuidv7 } from '../../lib/ids.ts'
import { amountInvalid, parseAmount } from '../ledger/ledger.rules.ts'
import type { NetworksService } from '../reference/networks.service.ts'
import type { Rail } from '../reference/rails.schemas.ts'
import type { RailsService } from '../reference/rails.service.ts'
import { candidateIban, candidateUkAccountNumber, candidateUsAccountNumber, isValidRoutingNumber, isValidUkAccount, normalizeIban } from './bank-numbers.ts'
import type { SimulateBankDepositBody, SimulateCryptoDepositBody } from './deposit-methods.schemas.ts'
import type { DepositMethodsService, DepositUsers, IncomingDestination } from './deposit-methods.service.ts'
import { cryptoDestination } from './destinations.ts'
import type { DepositsService } from '../transactions/deposits.service.ts'
import type { TransactionNode } from '../transactions/transactions.schemas.ts'

/** Records an incoming deposit as a pending transaction and enqueues its settlement, in the caller's transaction. */
export type DepositRecorder = Pick<DepositsService, 'record'>

// Networks where a transaction has exactly one sender (account-based chains), unlike UTXO chains.
const SINGLE_SENDER_FAMILIES = new Set(['ethereum', 'solana', 'xrp-ledger'])

// Where generated remitters bank: sandbox values apart from the deposit bank's, so a generated sender never
// equals a recipient. The sort code is the Vocalink specification's standard MOD11 example.
const REMITTER_SEPA = { countryCode: 'NL', bankCode: 'TSRB', accountDigits: 10, bic: 'TSRBNL20' }
const REMITTER_SORT_CODE = '107999'
const REMITTER_ROUTING_NUMBER = '110000000'

function depositMethodNotFound(): DomainError {
  return new DomainError('entity_not_found', 'The account deposit method cannot be found', { details: { entity: 'depositMethod' } })
}

function railNotFound(): DomainError {
  return new DomainError('entity_not_found', 'A rail for the specified type, asset and network cannot be found', { details: { entity: 'rail' } })
}

function invalidNumber(property: string, message: string): DomainError {
  return new DomainError('invalid_number', message, { details: { context: 'body', property } })
}

const remitterMatches = (): DomainError => new DomainError('remitter_and_recipient_cannot_match', 'The remitter and recipient cannot match')

/**
 * Sandbox test helpers: an incoming deposit as a rail would report it. The destination is resolved to the
 * deposit method that owns it within the organization, and the deposit is recorded pending; the background
 * worker settles it into the account.
 */
export class DepositTestHelpersService {
  private readonly db: Db
  private readonly depositMethods: DepositMethodsService
  private readonly deposits: DepositRecorder
  private readonly rails: RailsService
  private readonly networks: NetworksService
  private readonly users: DepositUsers
  private readonly afterRecord: () => void

  constructor(deps: {
    db: Db
    depositMethods: DepositMethodsService
    deposits: DepositRecorder
    rails: RailsService
    networks: NetworksService
    users: DepositUsers
    /** Called once a deposit is committed (e.g. to wake the worker rather than wait for its next poll). */
    afterRecord?: () => void
  }) {
    this.db = deps.db
    this.depositMethods = deps.depositMethods
    this.deposits = deps.deposits
    this.rails = deps.rails
    this.networks = deps.networks
    this.users = deps.users
    this.afterRecord = deps.afterRecord ?? (() => {})
  }

  async simulateCrypto(principal: Principal, body: SimulateCryptoDepositBody) {
    const family = this.networks.addressFamily(body.network)
    const rail = family === undefined ? undefined : this.rails.list({ type: ['crypto'], network: [body.network], asset: [body.asset] })[0]
    if (!rail || family === undefined) throw railNotFound()
    requireDeposits(rail)

    const check = this.networks.validateAddress(body.network, body.address, body.reference)
    if (!check.isValid) {
      const property = check.error.code === 'address_invalid' ? 'address' : 'reference'
      throw new DomainError('crypto_address_invalid', check.error.message, { details: { context: 'body', property, ...check.error.details } })
    }
    const senders = body.remitter?.addresses ?? []
    if (SINGLE_SENDER_FAMILIES.has(family) && senders.length > 1) {
      throw new DomainError('crypto_address_invalid', 'The number of addresses must be less than or equal to 1', { details: { context: 'body', property: 'remitter.addresses', threshold: { limit: 1 } } })
    }
    const recipient = cryptoDestination(family, body.address, body.reference)
    for (const sender of senders) {
      // A sender takes no destination tag, so only the address is checked.
      if (!this.networks.validateAddress(body.network, sender).isValid) {
        throw new DomainError('crypto_address_invalid', 'The crypto address is invalid', { details: { context: 'body', property: 'remitter.addresses' } })
      }
      if (cryptoDestination(family, sender) === recipient || cryptoDestination(family, sender) === cryptoDestination(family, body.address)) throw remitterMatches()
    }
    const amount = checkAmount(body.amount, rail.decimals)

    await this.record(principal, { type: 'crypto', network: body.network, address: body.address, ...(body.reference !== undefined ? { reference: body.reference } : {}) }, {
      asset: body.asset,
      amount,
      network: body.network,
      source: { type: 'crypto-address', network: body.network, ...(senders[0] !== undefined ? { address: senders[0] } : {}) },
    })
    return { cryptoDeposit: { ...body, amount } }
  }

  async simulateBank(principal: Principal, body: SimulateBankDepositBody) {
    const railsOfNetwork = this.rails.list({ type: ['bank'], network: [body.network] })
    // The US rails carry one asset; SEPA and FPS name theirs.
    const asset = 'asset' in body ? body.asset : railsOfNetwork[0]?.asset
    const rail = railsOfNetwork.find((candidate) => candidate.asset === asset)
    if (!rail || asset === undefined) {
      if (railsOfNetwork.length === 0) throw railNotFound()
      throw new DomainError('asset_not_supported', 'The asset is not supported', { details: { context: 'body', property: 'asset' } })
    }
    requireDeposits(rail)
    const amount = checkAmount(body.amount, rail.decimals)
    const name = body.remitter?.name ?? (await this.actingUserName(principal))

    let destination: IncomingDestination
    let remitter: Record<string, string>
    let recipient: Record<string, string>
    switch (body.network) {
      case 'sepa': {
        const iban = normalizeIban(body.iban)
        if (iban === undefined) throw depositMethodNotFound()
        const remitterIban = body.remitter?.iban ?? candidateIban(randomBytes(32), 0, REMITTER_SEPA)
        if (normalizeIban(remitterIban) === undefined) throw invalidNumber('remitter.iban', 'The remitter IBAN is invalid')
        if (normalizeIban(remitterIban) === iban) throw remitterMatches()
        destination = { type: 'bank', network: 'sepa', iban }
        recipient = { iban }
        remitter = { name, bic: body.remitter?.bic ?? REMITTER_SEPA.bic, iban: remitterIban }
        break
      }
      case 'fps': {
        const accountNumber = body.accountNumber.padStart(8, '0')
        const sortCode = body.remitter?.sortCode ?? REMITTER_SORT_CODE
        const remitterAccount = body.remitter?.accountNumber ?? candidateUkAccountNumber(randomBytes(32), 0, sortCode)
        if (!isValidUkAccount(sortCode, remitterAccount)) throw invalidNumber('remitter.accountNumber', 'The remitter sort code and account number fail the modulus check')
        if (sortCode === body.sortCode && remitterAccount === accountNumber) throw remitterMatches()
        destination = { type: 'bank', network: 'fps', sortCode: body.sortCode, accountNumber }
        recipient = { sortCode: body.sortCode, accountNumber }
        remitter = { name, sortCode, accountNumber: remitterAccount }
        break
      }
      case 'wire': {
        destination = { type: 'bank', network: 'wire', accountNumber: body.accountNumber }
        recipient = { accountNumber: body.accountNumber }
        remitter = { name, ...Object.fromEntries(Object.entries(body.remitter ?? {}).filter(([key]) => key !== 'name')) }
        break
      }
      default: {
        const routingNumber = body.remitter?.routingNumber ?? REMITTER_ROUTING_NUMBER
        if (!isValidRoutingNumber(routingNumber)) throw invalidNumber('remitter.routingNumber', 'The remitter routing number is invalid')
        const remitterAccount = body.remitter?.accountNumber ?? candidateUsAccountNumber(randomBytes(32), 0, 10)
        if (remitterAccount === body.accountNumber && (body.network !== 'ach' || routingNumber === body.routingNumber)) throw remitterMatches()
        if (body.network === 'ach' && !isValidRoutingNumber(body.routingNumber)) throw depositMethodNotFound()
        destination = body.network === 'ach'
          ? { type: 'bank', network: 'ach', accountNumber: body.accountNumber, routingNumber: body.routingNumber }
          : { type: 'bank', network: body.network, accountNumber: body.accountNumber }
        recipient = body.network === 'ach' ? { accountNumber: body.accountNumber, routingNumber: body.routingNumber } : { accountNumber: body.accountNumber }
        remitter = { name, accountNumber: remitterAccount, routingNumber }
        if (body.network === 'ach') {
          remitter.secCode = body.remitter && 'secCode' in body.remitter && body.remitter.secCode ? body.remitter.secCode : 'WEB'
          remitter.transactionType = body.remitter && 'transactionType' in body.remitter && body.remitter.transactionType ? body.remitter.transactionType : 'Push'
          remitter.serviceType = body.remitter && 'serviceType' in body.remitter && body.remitter.serviceType ? body.remitter.serviceType : 'SameDay'
        }
      }
    }
    const reference = 'reference' in body ? body.reference : undefined
    await this.record(principal, destination, { asset, amount, network: body.network, source: { type: 'bank-address', network: body.network } })
    return { bankDeposit: { network: body.network, ...recipient, ...(reference !== undefined ? { reference } : {}), asset, amount, remitter } }
  }

  private async record(principal: Principal, destination: IncomingDestination, deposit: { asset: string; amount: string; network: string; source: TransactionNode }): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      const owner = await this.depositMethods.resolveDestination(tx, principal.organizationId, destination)
      if (!owner) throw depositMethodNotFound()
      if (owner.asset !== deposit.asset) throw new DomainError('asset_not_supported', 'The asset is not supported', { details: { context: 'body', property: 'asset' } })
      await this.deposits.record(tx, {
        organizationId: principal.organizationId,
        userId: owner.ownerId,
        accountId: owner.accountId,
        asset: deposit.asset,
        amount: deposit.amount,
        network: deposit.network,
        source: deposit.source,
        // Each simulated deposit is a new one: it has no identity of its own on a chain or a rail.
        reference: `simulated-deposit:${uuidv7()}`,
      })
    })
    this.afterRecord()
  }

  private async actingUserName(principal: Principal): Promise<string> {
    if (principal.userId === null) return 'Sandbox Sender'
    const user = await this.users.declared(principal.organizationId, principal.userId)
    return user?.profile.fullName ?? user?.profile.name ?? 'Sandbox Sender'
  }
}

function requireDeposits(rail: Rail): void {
  if (!rail.features.includes('deposit')) {
    throw new DomainError('rail_feature_not_available', 'The \'deposit\' feature is not available for the rail', { details: { feature: 'deposit' } })
  }
}

/** The amount as the ledger will take it; a negative amount is refused as not positive rather than as malformed. */
function checkAmount(value: string, decimals: number): string {
  if (/^-[0-9]+(\.[0-9]+)?$/.test(value)) throw withContext(amountInvalid('The amount must be greater than zero', 'positive'))
  try {
    return parseAmount(value, decimals).toFixed()
  } catch (error) {
    throw error instanceof DomainError ? withContext(error) : error
  }
}

function withContext(error: DomainError): DomainError {
  return new DomainError(error.code, error.message, { details: { context: 'body', ...error.details }, retryable: error.retryable })
}
