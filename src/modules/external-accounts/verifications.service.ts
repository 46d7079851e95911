import { randomBytes } from 'node:crypto'
import type { Db, Executor, ExternalAccountRow, ExternalAccountVerificationRow } from '../../db/schema.ts'
import { DomainError, notFound, operationNotAllowed, requestInvalid } from '../../lib/errors.ts'
import { uuidv7 } from '../../lib/ids.ts'
import type { SignatureCheck, SignedMessage } from '../../lib/signatures/index.ts'
import { auditObject } from '../audit/index.ts'
import type { AddressFamily, Chain } from '../reference/index.ts'
import type { ExternalAccount } from './external-accounts.schemas.ts'
import { SELF_DECLARATION_SCHEMA, selfDeclarationViolations, signedMessageViolations, signingMessage, type SignatureProof } from './verification-proofs.ts'
import { nextVerificationStatus, REQUEST_TYPES, requestStatus, VERIFICATION_LEVELS, type VerificationLevel } from './verification.machine.ts'
import * as repository from './verifications.repository.ts'
import type { Verification } from './verifications.schemas.ts'

export type VerificationSummary = NonNullable<ExternalAccount['verifications']>[number]

/** What the verifications need of the networks of the catalogue. */
export interface VerificationNetworks {
  canonicalAddress(code: string, address: string, reference?: string): string
  /** How addresses of a crypto network are written; undefined for other networks. */
  addressFamily(code: string): AddressFamily | undefined
  /** The chain this deployment uses: test chains in sandbox, main chains in production. */
  readonly deploymentChain: Chain
}

interface ProofOptions {
  selfDeclaration?: { schema: Record<string, unknown> }
  messageSigning?: { message: string }
}

const LEVEL_ORDER = new Map(VERIFICATION_LEVELS.map((level, index) => [level, index]))

const notStarted = () => notFound('external-account-verification')
const answered = () => operationNotAllowed('The verification is completed: it cannot be answered again', ['verification-update-not-allowed'])

/**
 * The verifications of crypto external accounts (docs/external-accounts.md#verifications): a user proves what an
 * address is by declaring it (`declared`, for the travel rule) or proves that they control it by signing a message
 * with its key (`verified`). Each level is started once per external account and completed once, by a proof that
 * holds: the declaration is validated against the schema the verification serves, the signature verified for real
 * against the address. The caller has found the account: a live crypto external account of the acting user.
 */
export class AddressVerifications {
  private readonly db: Db
  private readonly networks: VerificationNetworks
  private readonly verifySignature: (input: SignedMessage) => SignatureCheck

  constructor(deps: { db: Db; networks: VerificationNetworks; verifySignature: (input: SignedMessage) => SignatureCheck }) {
    this.db = deps.db
    this.networks = deps.networks
    this.verifySignature = deps.verifySignature
  }

  async list(account: ExternalAccountRow): Promise<Verification[]> {
    const rows = await repository.listFor(this.db, account.organization_id, [account.id])
    return sortByLevel(rows).map((row) => present(row))
  }

  /** The compact forms of the verifications of many external accounts, read together, by account id. */
  async summaries(db: Executor, organizationId: string, accounts: readonly ExternalAccountRow[]): Promise<Map<string, VerificationSummary[]>> {
    const ids = accounts.filter((account) => account.type === 'crypto').map((account) => account.id)
    const byAccount = new Map<string, VerificationSummary[]>()
    for (const row of sortByLevel(await repository.listFor(db, organizationId, ids))) {
      const list = byAccount.get(row.external_account_id) ?? []
      list.push(summary(row))
      byAccount.set(row.external_account_id, list)
    }
    return byAccount
  }

  /** Starts the level; a level started before is the answer as it stands (`started: false`), never a second one. */
  async start(account: ExternalAccountRow, level: VerificationLevel): Promise<{ verification: Verification; started: boolean }> {
    const existing = await repository.find(this.db, account.organization_id, account.id, level)
    if (existing) return { verification: present(existing), started: false }
    const status = nextVerificationStatus(null, 'start')!
    const address = (account.details as { address: string }).address
    const now = new Date()
    const proofOptions: ProofOptions = level === 'declared'
      ? { selfDeclaration: { schema: structuredClone(SELF_DECLARATION_SCHEMA) as Record<string, unknown> } }
      : { messageSigning: { message: signingMessage({ network: account.network, address, nonce: randomBytes(16).toString('hex') }) } }
    const id = uuidv7(now.getTime())
    auditObject('external-account-verification', id)
    const inserted = await repository.insert(this.db, {
      organization_id: account.organization_id,
      id,
      external_account_id: account.id,
      owner_id: account.owner_id,
      level,
      type: REQUEST_TYPES[level],
      status,
      network: account.network,
      address,
      canonical_address: this.networks.canonicalAddress(account.network, address),
      proof_options: proofOptions as Record<string, unknown>,
      created_at: now,
    })
    if (inserted) return { verification: present(inserted), started: true }
    // Started at the same moment by another request: that one is the verification.
    const raced = await repository.find(this.db, account.organization_id, account.id, level)
    if (!raced) throw new Error(`The ${level} verification of external account ${account.id} was neither inserted nor found`)
    return { verification: present(raced), started: false }
  }

  /**
   * Completes the level with `proof`, when it holds. A completed level is 409 `operation_not_allowed`
   * (`verification-update-not-allowed`); a proof of the wrong shape is 400 `request_invalid`; a signature that does
   * not verify is 409 `crypto_address_signature_invalid` with the reason. A refused proof changes nothing.
   */
  async answer(account: ExternalAccountRow, level: VerificationLevel, proof: unknown): Promise<Verification> {
    const row = await repository.find(this.db, account.organization_id, account.id, level)
    if (!row) throw notStarted()
    // The path names the level only: the audit row names the verification, as its start did.
    auditObject('external-account-verification', row.id)
    const to = nextVerificationStatus(row.status, 'prove')
    if (to === null) throw answered()
    const options = row.proof_options as ProofOptions
    const recorded = level === 'declared' ? this.declared(options, proof) : this.signed(row, options, proof)
    const done = await repository.complete(this.db, row.organization_id, row.id, { from: row.status, to }, recorded, new Date())
    if (!done) throw answered()
    return present(done)
  }

  /**
   * Which of `addresses` are those of a live crypto external account of the user on the network with a completed
   * verification (any level), compared in their canonical spellings; the addresses are returned as given.
   */
  async declaredAddresses(db: Executor, organizationId: string, ownerId: string, network: string, addresses: readonly string[]): Promise<Set<string>> {
    const canonical = new Map(addresses.map((address) => [address, this.networks.canonicalAddress(network, address)]))
    const found = await repository.completedAddresses(db, organizationId, ownerId, network, [...new Set(canonical.values())])
    return new Set(addresses.filter((address) => found.has(canonical.get(address)!)))
  }

  private declared(options: ProofOptions, proof: unknown): Record<string, unknown> {
    const schema = options.selfDeclaration?.schema
    if (!schema) throw new Error('A declared verification without its self-declaration schema')
    const violations = selfDeclarationViolations(schema, proof)
    if (violations.length > 0) throw requestInvalid('body', violations)
    return proof as Record<string, unknown>
  }

  private signed(row: ExternalAccountVerificationRow, options: ProofOptions, proof: unknown): Record<string, unknown> {
    const message = options.messageSigning?.message
    if (message === undefined) throw new Error('A verified verification without its message')
    const violations = signedMessageViolations(proof)
    if (violations.length > 0) throw requestInvalid('body', violations)
    const { signature, publicKey } = proof as SignatureProof
    const family = this.networks.addressFamily(row.network)
    if (family === undefined) throw new Error(`Network ${row.network} of a crypto external account has no address family`)
    const check = this.verifySignature({ family, chain: this.networks.deploymentChain, address: row.address, message, signature, ...(publicKey !== undefined ? { publicKey } : {}) })
    if (!check.valid) {
      throw new DomainError('crypto_address_signature_invalid', 'The signature does not prove control of the address', { details: { reason: check.reason } })
    }
    return { scheme: check.scheme, signature, ...(publicKey !== undefined ? { publicKey } : {}) }
  }
}

function sortByLevel(rows: ExternalAccountVerificationRow[]): ExternalAccountVerificationRow[] {
  return rows.toSorted((a, b) => LEVEL_ORDER.get(a.level)! - LEVEL_ORDER.get(b.level)!)
}

function summary(row: ExternalAccountVerificationRow): VerificationSummary {
  return {
    level: row.level,
    status: row.status,
    via: 'request-for-information',
    ...(row.completed_at !== null ? { completedAt: row.completed_at.toISOString() } : {}),
  }
}

function present(row: ExternalAccountVerificationRow): Verification {
  return {
    ...summary(row),
    requestForInformation: {
      id: row.id,
      type: row.type,
      status: requestStatus(row.status),
      context: { network: row.network, addresses: [row.address] },
      proofOptions: row.proof_options as ProofOptions,
      ...(row.proof !== null ? { proof: row.proof as NonNullable<Verification['requestForInformation']['proof']> } : {}),
    },
  }
}
