import type { Principal } from '../../http/principal.ts'
import { isValidRoutingNumber, isValidUkAccount, normalizeIban } from '../../lib/bank-numbers.ts'
import { DomainError } from '../../lib/errors.ts'
import type { BankRecipient } from '../../providers/rails/rails.ts'
import type { SandboxBankRail, SandboxChainRail } from '../../providers/rails/sandbox.ts'
import { amountInvalid, parseAmount } from '../ledger/index.ts'
import type { NetworksService, Rail, RailsService } from '../reference/index.ts'
import type { SimulateBankDepositBody, SimulateCryptoDepositBody, SimulatedBankDeposit } from './deposit-methods.schemas.ts'
import type { DepositUsers } from './deposit-methods.service.ts'
import { cryptoDestination } from './destinations.ts'
import { depositMethodNotFound } from './incoming-deposits.service.ts'

// Networks where a transaction has exactly one sender (account-based chains), unlike UTXO chains.
const SINGLE_SENDER_FAMILIES = new Set(['ethereum', 'solana', 'xrp-ledger'])

function railNotFound(): DomainError {
  return new DomainError('entity_not_found', 'A rail for the specified type, asset and network cannot be found', { details: { entity: 'rail' } })
}

function invalidNumber(property: string, message: string): DomainError {
  return new DomainError('invalid_number', message, { details: { context: 'body', property } })
}

const remitterMatches = (): DomainError => new DomainError('remitter_and_recipient_cannot_match', 'The remitter and recipient cannot match')

/**
 * Sandbox test helpers: an incoming deposit as a rail would report it. The request is checked as the API
 * checks any request; the sandbox rails then send the payment, which the deployment records pending at the
 * deposit method its destination names (see IncomingDepositsService); the background worker settles it.
 */
export class DepositTestHelpersService {
  private readonly rails: RailsService
  private readonly networks: NetworksService
  private readonly users: DepositUsers
  private readonly bankRail: SandboxBankRail
  private readonly chainRail: SandboxChainRail

  constructor(deps: { rails: RailsService; networks: NetworksService; users: DepositUsers; bankRail: SandboxBankRail; chainRail: SandboxChainRail }) {
    this.rails = deps.rails
    this.networks = deps.networks
    this.users = deps.users
    this.bankRail = deps.bankRail
    this.chainRail = deps.chainRail
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

    await this.chainRail.send({
      organizationId: principal.organizationId,
      network: body.network,
      address: body.address,
      ...(body.reference !== undefined ? { reference: body.reference } : {}),
      asset: body.asset,
      amount,
      senders,
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
    const remitter = this.bankRail.remitter(body.network, { ...body.remitter, name: body.remitter?.name ?? (await this.actingUserName(principal)) })

    let recipient: BankRecipient
    switch (body.network) {
      case 'sepa': {
        const iban = normalizeIban(body.iban)
        if (iban === undefined) throw depositMethodNotFound()
        const remitterIban = normalizeIban(remitter.iban!)
        if (remitterIban === undefined) throw invalidNumber('remitter.iban', 'The remitter IBAN is invalid')
        if (remitterIban === iban) throw remitterMatches()
        recipient = { network: 'sepa', iban }
        break
      }
      case 'fps': {
        const accountNumber = body.accountNumber.padStart(8, '0')
        if (!isValidUkAccount(remitter.sortCode!, remitter.accountNumber!)) throw invalidNumber('remitter.accountNumber', 'The remitter sort code and account number fail the modulus check')
        if (remitter.sortCode === body.sortCode && remitter.accountNumber === accountNumber) throw remitterMatches()
        recipient = { network: 'fps', sortCode: body.sortCode, accountNumber }
        break
      }
      case 'wire':
        recipient = { network: 'wire', accountNumber: body.accountNumber }
        break
      default: {
        if (!isValidRoutingNumber(remitter.routingNumber!)) throw invalidNumber('remitter.routingNumber', 'The remitter routing number is invalid')
        if (remitter.accountNumber === body.accountNumber && (body.network !== 'ach' || remitter.routingNumber === body.routingNumber)) throw remitterMatches()
        if (body.network === 'ach' && !isValidRoutingNumber(body.routingNumber)) throw depositMethodNotFound()
        recipient = body.network === 'ach'
          ? { network: 'ach', accountNumber: body.accountNumber, routingNumber: body.routingNumber }
          : { network: body.network, accountNumber: body.accountNumber }
      }
    }
    const reference = 'reference' in body ? body.reference : undefined
    await this.bankRail.send({ organizationId: principal.organizationId, recipient, asset, amount, ...(reference !== undefined ? { reference } : {}), remitter })
    // The rail's remitter holds the fields of the network it was made for (the answer's schema names them).
    const bankDeposit = { ...recipient, ...(reference !== undefined ? { reference } : {}), asset, amount, remitter } as SimulatedBankDeposit
    return { bankDeposit }
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
