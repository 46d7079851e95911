import { createHmac, timingSafeEqual } from 'node:crypto'
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

  async lookup(network: string, address: string): Promise<DirectoryEntry | null> {
    return (SANDBOX_VASP_ADDRESSES[network] ?? []).includes(address) ? SANDBOX_VASP : null
  }

  private mac(body: string): string {
    return createHmac('sha256', this.key).update(body).digest('base64url')
  }
}
