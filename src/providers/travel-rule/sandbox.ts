import { createHmac, timingSafeEqual } from 'node:crypto'
import type { Counterparty, Customer, ValidateRequest } from '../../../widgets/travel-rule-widget/types.ts'
import { bearerToken } from '../../lib/bearer.ts'
import { DomainError } from '../../lib/errors.ts'
import { TravelRuleNodeUnavailableError, type DirectoryEntry, type TransferAssessment, type TravelRuleNode, type TravelRuleTransfer } from './travel-rule-node.ts'

/**
 * The sandbox travel-rule node: deterministic, in process, its test values documented in docs/sandbox.md.
 * - A declaration naming a party whose name contains `refused` (any case) is refused (`counterparty-refused`), as a
 *   sanctioned party or a VASP that rejects the transfer would be; one containing `unavailable` finds the node
 *   down (try again later).
 * - The directory knows the addresses listed in SANDBOX_VASP_ADDRESSES as hosted by "Sandbox Exchange".
 * - Customer tokens are HMACs over the organization, the user and the expiry: the node's own pages and API (served by
 *   Tessera under `/sandbox/travel-rule-node`) accept nothing else.
 */
export const SANDBOX_VASP: DirectoryEntry = { did: 'did:web:sandbox-exchange.tessera.test', name: 'Sandbox Exchange' }

/** Addresses the sandbox directory knows as hosted by Sandbox Exchange, by network. */
export const SANDBOX_VASP_ADDRESSES: Record<string, readonly string[]> = {
  bitcoin: ['tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx'],
  ethereum: ['0x00000000000000000000000000000000000000e5'],
  'xrp-ledger': ['rPT1Sjq2YGrBMTttX4GZHjKu9dyfzbpAYe'],
}

/** The IVMS 101 person of the other party; none for the user themself when Tessera knows no name for them. */
function ivmsPerson(party: Counterparty, customer: Customer) {
  if (party.type === 'self' && customer.name.trim() === '') return undefined
  if (party.type === 'legal' || (party.type === 'self' && customer.type === 'legal')) {
    const name = party.type === 'legal' ? party.name : customer.name
    return { legalPerson: { name: { nameIdentifier: [{ legalPersonName: name, legalPersonNameIdentifierType: 'LEGL' }] } } }
  }
  if (party.type === 'natural') return { naturalPerson: { name: { nameIdentifier: [{ primaryIdentifier: party.lastName, secondaryIdentifier: party.firstName, nameIdentifierType: 'LEGL' }] } } }
  // The user themself: the customer's name as one identifier (Tessera holds the parts).
  return { naturalPerson: { name: { nameIdentifier: [{ primaryIdentifier: customer.name, nameIdentifierType: 'LEGL' }] } } }
}

export class SandboxTravelRuleNode implements TravelRuleNode {
  readonly provider = 'notabene'
  readonly nodeUrl: string
  private readonly key: Buffer

  constructor(deps: { publicUrl: string; key: Buffer }) {
    this.nodeUrl = `${deps.publicUrl}/sandbox/travel-rule-node`
    this.key = deps.key
  }

  async assess(transfer: TravelRuleTransfer): Promise<TransferAssessment> {
    const names = transfer.names.map((name) => name.toLowerCase())
    if (names.some((name) => name.includes('unavailable'))) throw new TravelRuleNodeUnavailableError()
    if (names.some((name) => name.includes('refused'))) return { status: 'refused', reason: 'counterparty-refused' }
    return { status: 'accepted' }
  }

  async customerToken(input: { organizationId: string; userId: string; ttlSeconds: number }): Promise<string> {
    const expiresAt = Math.floor(Date.now() / 1000) + input.ttlSeconds
    const body = Buffer.from(JSON.stringify({ o: input.organizationId, u: input.userId, e: expiresAt })).toString('base64url')
    return `${body}.${this.mac(body)}`
  }

  /** The organization and user of a customer token this node issued and that has not expired; null otherwise. */
  readCustomerToken(token: string): { organizationId: string; userId: string } | null {
    const [body, mac] = token.split('.')
    if (body === undefined || mac === undefined) return null
    const expected = Buffer.from(this.mac(body))
    const given = Buffer.from(mac)
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) return null
    try {
      const { o, u, e } = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as { o: unknown; u: unknown; e: unknown }
      if (typeof o !== 'string' || typeof u !== 'string' || typeof e !== 'number' || e * 1000 <= Date.now()) return null
      return { organizationId: o, userId: u }
    } catch {
      return null
    }
  }

  /**
   * The customer of a request to the node's own API, from its `Authorization: Bearer <customer token>`; refuses
   * (`token_invalid`) anything else, a Tessera token included.
   */
  authenticate(authorization: string | undefined): { organizationId: string; userId: string } {
    const token = bearerToken(authorization)
    const customer = token !== '' ? this.readCustomerToken(token) : null
    if (!customer) throw new DomainError('token_invalid', 'The travel-rule node does not know this customer token')
    return customer
  }

  /**
   * The network's description of the transfer the form collected (IVMS 101 persons, the ownership proof, the VASPs
   * involved): what the widget's page answers the request for information with. A transfer to or from the user's own
   * wallet is valid only with a proof, and a self-declaration only once confirmed.
   */
  async describeTransfer(form: ValidateRequest): Promise<Record<string, unknown>> {
    const vasp = await this.lookup(form.network, form.address)
    const self = form.counterparty.type === 'self'
    const errors: string[] = []
    if (self && form.proof === undefined) errors.push('A transfer to or from the user\'s own wallet needs a proof that they control it')
    if (form.proof !== undefined && 'confirmed' in form.proof && !form.proof.confirmed) errors.push('The self-declaration was not confirmed')
    const person = ivmsPerson(form.counterparty, form.customer)
    const side = person === undefined ? undefined : form.direction === 'deposit' ? { originator: { originatorPersons: [person] } } : { beneficiary: { beneficiaryPersons: [person] } }
    const counterpartyName = form.counterparty.type === 'natural' ? `${form.counterparty.firstName} ${form.counterparty.lastName}` : form.counterparty.type === 'legal' ? form.counterparty.name : form.customer.name
    return {
      valid: errors.length === 0,
      errors,
      status: errors.length === 0 ? 'verified' : 'pending',
      value: {
        amountDecimal: form.amountDecimal,
        asset: form.asset,
        network: form.network,
        [form.direction === 'deposit' ? 'source' : 'destination']: form.address,
        counterparty: { name: counterpartyName, type: self ? 'self' : form.counterparty.type, ...(vasp ? { vasp } : {}) },
      },
      ...(side !== undefined ? { ivms101: side } : {}),
      originatorEqualsBeneficiary: self,
      ...(vasp ? { [form.direction === 'deposit' ? 'originatorVASPdid' : 'beneficiaryVASPdid']: vasp.did } : {}),
      ...(form.proof !== undefined ? { proof: { ...form.proof, address: form.address } } : {}),
    }
  }

  async lookup(network: string, address: string): Promise<DirectoryEntry | null> {
    return (SANDBOX_VASP_ADDRESSES[network] ?? []).includes(address) ? SANDBOX_VASP : null
  }

  private mac(body: string): string {
    return createHmac('sha256', this.key).update(body).digest('base64url')
  }
}
