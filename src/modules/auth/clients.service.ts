import { randomUUID } from 'node:crypto'
import type { ChangeFeed } from '../../db/changes.ts'
import type { ClientRow, Db } from '../../db/schema.ts'
import { InvalidatedCache } from '../../lib/cache.ts'
import { generateSecret, hashSecret, safeEqual, sha256Hex, verifySecret } from '../../lib/secrets.ts'
import { isUniqueViolation } from '../../db/errors.ts'
import { isUuid } from '../../lib/ids.ts'
import * as repository from './clients.repository.ts'
import type { ScopeCatalogue } from './scopes.ts'

export interface ClientCredentials {
  clientId: string
  clientSecret: string
  organizationId: string
  scopes: string[]
}

export interface ClientSummary {
  clientId: string
  organizationId: string
  name: string
  scopes: string[]
  createdAt: string
  revokedAt: string | null
}

/** A mistake in what the operator asked for (unknown scope, missing client): reported, never a crash. */
export class ClientInputError extends Error {}

const WILDCARD = '*'
const MAX_CACHED_CREDENTIALS = 10_000
const CACHE_TTL_MS = 60_000

/** The cache and change feed key of a client: ids are UUIDs, the same whatever their case. */
const cacheKey = (clientId: string) => `client:${clientId.toLowerCase()}`

/**
 * Scopes a stored grant stands for: `*` grows with the service, a list stays as granted, less any scope the
 * deployment no longer defines (a provider taken out of its configuration).
 */
export function grantedScopes(stored: string, catalogue: ScopeCatalogue): string[] {
  return stored === WILDCARD ? [...catalogue.all] : stored.split(' ').filter((scope) => scope !== '' && catalogue.has(scope))
}

/** Parses `"a b"` or `"*"`, rejecting scopes the service does not define. */
export function parseScopeGrant(input: string, catalogue: ScopeCatalogue): string {
  const requested = input.trim().split(/\s+/).filter(Boolean)
  if (requested.length === 0) throw new ClientInputError('At least one scope is required (or "*" for all of them)')
  if (requested.includes(WILDCARD)) {
    if (requested.length > 1) throw new ClientInputError('"*" grants every scope and cannot be combined with others')
    return WILDCARD
  }
  const unknown = requested.filter((s) => !catalogue.has(s))
  if (unknown.length > 0) throw new ClientInputError(`Unknown scope(s): ${unknown.join(', ')}`)
  return [...new Set(requested)].sort().join(' ')
}

function summarize(row: ClientRow): ClientSummary {
  return {
    clientId: row.id,
    organizationId: row.organization_id,
    name: row.name,
    // As stored: what the operator granted, even a scope this deployment no longer defines.
    scopes: row.scopes === WILDCARD ? [WILDCARD] : row.scopes.split(' ').filter(Boolean),
    createdAt: row.created_at.toISOString(),
    revokedAt: row.revoked_at?.toISOString() ?? null,
  }
}

export class ClientsService {
  private readonly db: Db
  private readonly changes: ChangeFeed
  readonly scopes: ScopeCatalogue
  /** Client rows by id, read on every authenticated request; evicted everywhere when a client changes. */
  private readonly rows: InvalidatedCache<ClientRow>
  /**
   * Ids with no client, remembered apart (so that a flood of made-up ids cannot push real clients out of `rows`),
   * so that an unknown id costs what a known one does: no database read. A client's creation announces its id.
   */
  private readonly absent: InvalidatedCache<true>
  /**
   * Client id → digest of a secret already proven against the stored scrypt hash. Secrets are 256-bit random
   * values, so a digest match is as strong as the hash; it spares the token endpoint one scrypt per request. Tied
   * to the stored hash, so a rotated secret invalidates it. Only proofs are kept: a wrong secret, for a known id or
   * an unknown one, costs one scrypt every time, so the time an attempt takes tells nothing about which ids exist.
   */
  private readonly proofs = new Map<string, { digest: string; secretHash: string }>()

  /** Checks a secret against a stored scrypt hash (lib/secrets.ts); given by tests that count the checks. */
  private readonly checkSecret: (secret: string, stored: string) => Promise<boolean>

  constructor(db: Db, changes: ChangeFeed, scopes: ScopeCatalogue, options: { checkSecret?: (secret: string, stored: string) => Promise<boolean> } = {}) {
    this.db = db
    this.changes = changes
    this.scopes = scopes
    this.checkSecret = options.checkSecret ?? verifySecret
    this.rows = new InvalidatedCache({ maxEntries: 10_000, ttlMs: CACHE_TTL_MS, trusted: () => changes.isLive() })
    this.absent = new InvalidatedCache({ maxEntries: 10_000, ttlMs: CACHE_TTL_MS, trusted: () => changes.isLive() })
    changes.subscribe(this.rows)
    changes.subscribe(this.absent)
  }

  private async findClient(clientId: string): Promise<ClientRow | null> {
    const key = cacheKey(clientId)
    // A cached row answers at once, as on nearly every request: only an id without a row needs the absence's cache.
    const cached = this.rows.get(key)
    if (cached !== undefined) return cached
    let row: ClientRow | undefined
    // Read inside the absence's load: a creation announced while it reads keeps the absence from being remembered.
    await this.absent.load(key, async () => {
      row = await this.rows.load(key, () => repository.findClient(this.db, clientId))
      return row ? undefined : true
    })
    return row ?? null
  }

  async create(input: { name: string; scopes: string; organizationId?: string; clientId?: string; clientSecret?: string }): Promise<ClientCredentials> {
    const name = input.name.trim()
    if (name === '' || name.length > 200) throw new ClientInputError('A client name of 1 to 200 characters is required')
    const scopes = parseScopeGrant(input.scopes, this.scopes)
    if (input.organizationId !== undefined && !isUuid(input.organizationId)) throw new ClientInputError('The organization id must be a UUID')
    const clientId = input.clientId ?? randomUUID()
    const clientSecret = input.clientSecret ?? generateSecret()
    const secretHash = await hashSecret(clientSecret)
    const now = new Date()
    const organizationId = await this.db.transaction().execute(async (tx) => {
      if (input.organizationId !== undefined) {
        if (!(await repository.organizationExists(tx, input.organizationId))) {
          throw new ClientInputError(`Organization ${input.organizationId} does not exist`)
        }
        await repository.insertClient(tx, { id: clientId, organizationId: input.organizationId, name, secretHash, scopes, createdAt: now })
        // Processes may remember this id as one with no client.
        await this.changes.announce(tx, cacheKey(clientId))
        return input.organizationId
      }
      const id = randomUUID()
      await repository.insertOrganization(tx, { id, name, createdAt: now })
      await repository.insertClient(tx, { id: clientId, organizationId: id, name, secretHash, scopes, createdAt: now })
      await this.changes.announce(tx, cacheKey(clientId))
      return id
    })
    this.changes.evictLocally(cacheKey(clientId))
    return { clientId, clientSecret, organizationId, scopes: scopes === WILDCARD ? [WILDCARD] : grantedScopes(scopes, this.scopes) }
  }

  async list(): Promise<ClientSummary[]> {
    return (await repository.listClients(this.db)).map(summarize)
  }

  async revoke(clientId: string): Promise<ClientSummary> {
    if (!isUuid(clientId)) throw new ClientInputError('The client id must be a UUID')
    const existing = await repository.findClient(this.db, clientId)
    if (!existing) throw new ClientInputError(`Client ${clientId} does not exist`)
    await this.db.transaction().execute(async (tx) => {
      await repository.revokeClient(tx, clientId, new Date())
      await this.changes.announce(tx, cacheKey(clientId))
    })
    this.changes.evictLocally(cacheKey(clientId))
    return summarize((await repository.findClient(this.db, clientId))!)
  }

  /**
   * The client a new deployment starts with: the configured one when it does not exist yet, otherwise a
   * random one when the deployment has no client at all. Returns null when nothing was created.
   */
  async ensureInitialClient(initial: { clientId: string; clientSecret: string } | null, createWhenEmpty: boolean): Promise<ClientCredentials | null> {
    if (initial) {
      if (await repository.findClient(this.db, initial.clientId)) return null
      try {
        return await this.create({ name: 'Initial client', scopes: WILDCARD, ...initial })
      } catch (error) {
        // Processes starting together on one database: another one created it first.
        if (isUniqueViolation(error, 'clients_pkey')) return null
        throw error
      }
    }
    if (!createWhenEmpty || (await repository.countClients(this.db)) > 0) return null
    return this.create({ name: 'Sandbox client', scopes: WILDCARD })
  }

  /** The active client these credentials prove, or null. */
  async authenticate(clientId: string, clientSecret: string): Promise<ClientRow | null> {
    if (!isUuid(clientId)) return null
    const id = clientId.toLowerCase()
    const client = await this.findClient(id)
    const digest = sha256Hex(clientSecret)
    const proof = client ? this.proofs.get(client.id) : undefined
    let matched: boolean
    // Only the secret already proven skips scrypt: any other, for any id, pays it.
    if (client && proof && proof.secretHash === client.secret_hash && safeEqual(proof.digest, digest)) matched = true
    else {
      // An unknown id spends the scrypt of a real check, against a hash nothing matches.
      matched = (await this.checkSecret(clientSecret, client?.secret_hash ?? DUMMY_HASH)) && client !== null
      if (client && matched) {
        if (this.proofs.size >= MAX_CACHED_CREDENTIALS) this.proofs.delete(this.proofs.keys().next().value!)
        this.proofs.set(client.id, { digest, secretHash: client.secret_hash })
      }
    }
    return client !== null && client.revoked_at === null && matched ? client : null
  }

  async isRevoked(clientId: string): Promise<boolean> {
    const row = await this.findClient(clientId)
    return !row || row.revoked_at !== null
  }
}

const DUMMY_HASH = 'scrypt$16384$8$1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'
