import type { Announcement, ChangeFeed } from '../../db/changes.ts'
import type { Db, Executor } from '../../db/schema.ts'
import { conditionMatches, parseEntityTags, type EntityTagCondition } from '../../http/conditional.ts'
import type { Principal } from '../../http/principal.ts'
import { InvalidatedCache } from '../../lib/cache.ts'
import { DomainError, notFound, requestInvalid } from '../../lib/errors.ts'
import { sha256Hex } from '../../lib/secrets.ts'
import { applyJsonPatch } from './json-patch.ts'
import * as repository from './metadata.repository.ts'
import type { MetadataEntity, MetadataKey, MetadataRevision } from './metadata.repository.ts'
import { characterCount, checkMetadata, METADATA_MAX_CHARACTERS, metadataTooLarge } from './metadata.rules.ts'

export type { MetadataEntity }

export const METADATA_ENTITIES: readonly MetadataEntity[] = ['accounts', 'external-accounts', 'files', 'transactions', 'users']

/**
 * Revisions kept in memory: at most this many (each at most 1024 characters and its tag, so a few megabytes), each at
 * most this long even if the announcement of its change never arrived.
 */
const CACHED_REVISIONS = 20_000
const CACHED_REVISION_TTL_MS = 60_000

/** The change feed's key of an entity's metadata. */
const cacheKey = (key: MetadataKey) => `metadata:${key.organizationId}:${key.entityType}:${key.entityId}`

/** The entity name errors use for a collection: `external-accounts` → `external-account`. */
const singular = (entity: MetadataEntity) => entity.replace(/s$/, '')

/**
 * Finds the instance an `{entityId}` of the path (a lower-case UUID) names for the caller: its id when the caller
 * may use it, null when it does not exist for them. Each entity's module registers its own.
 */
export type EntityResolver = (principal: Principal, entityId: string) => Promise<string | null>

export interface MetadataConditions {
  ifMatch?: string
  ifNoneMatch?: string
}

export interface MetadataResult {
  metadata: Record<string, unknown>
  etag: string
}

/** The tag of a revision: a digest of exactly the stored text (64 hexadecimal characters). */
export function metadataEtag(text: string): string {
  return sha256Hex(text)
}

function revisionOf(text: string): MetadataRevision {
  return { text, etag: metadataEtag(text) }
}

function resultOf(revision: MetadataRevision): MetadataResult {
  return { metadata: JSON.parse(revision.text) as Record<string, unknown>, etag: revision.etag }
}

function metadataNotFound(): DomainError {
  return new DomainError('entity_not_found', 'The entity metadata cannot be found', { details: { entity: 'metadata' } })
}

function preconditionFailed(message = 'The If-Match header value does not match the current metadata'): DomainError {
  return new DomainError('precondition_failed', message)
}

function condition(header: string | undefined, name: 'if-match' | 'if-none-match'): EntityTagCondition | undefined {
  const parsed = parseEntityTags(header)
  if (parsed === null) {
    throw requestInvalid('headers', [{ property: name, rule: 'pattern', ruleParams: { pattern: '*, or entity tags of 64 hexadecimal characters' } }])
  }
  return parsed
}

/**
 * Free-form JSON metadata of users, accounts, external accounts, files and transactions, with
 * revisions exposed as entity tags for conditional requests.
 *
 * Reads are served from memory when nothing changed: every write (replace, patch, delete) announces its key on the
 * change feed in its own statement, every process evicts it when the notification arrives (the writing process at
 * once), and a process that cannot hear the feed reads the database (docs/deployment.md). A creation announces
 * nothing: an absence is never cached.
 */
export class MetadataService {
  private readonly db: Db
  private readonly changes: ChangeFeed
  private readonly resolvers = new Map<MetadataEntity, EntityResolver>()
  private readonly revisions: InvalidatedCache<MetadataRevision>

  constructor(db: Db, changes: ChangeFeed) {
    this.db = db
    this.changes = changes
    this.revisions = new InvalidatedCache({ maxEntries: CACHED_REVISIONS, ttlMs: CACHED_REVISION_TTL_MS, trusted: () => changes.isLive() })
    changes.subscribe(this.revisions)
  }

  /** The current revision, from memory when the feed says it has not changed. */
  private current(key: MetadataKey): Promise<MetadataRevision | undefined> {
    return this.revisions.load(cacheKey(key), () => repository.findMetadata(this.db, key))
  }

  /**
   * Runs a write of `key`'s metadata, given the announcement its statement returns (db/changes.ts), and forgets the
   * key here once the write is over, whatever its outcome: this process reads its own writes at once.
   */
  private async announcing<T>(key: MetadataKey, write: (announce: Announcement) => Promise<T>): Promise<T> {
    try {
      return await write(this.changes.notification(cacheKey(key)))
    } finally {
      this.changes.evictLocally(cacheKey(key))
    }
  }

  /** Makes an entity's metadata reachable; until its module registers, every instance is 404. */
  registerEntity(entity: MetadataEntity, resolver: EntityResolver): void {
    this.resolvers.set(entity, resolver)
  }

  private async keyFor(principal: Principal, entity: MetadataEntity, entityId: string): Promise<MetadataKey> {
    const resolver = this.resolvers.get(entity)
    // `me` names the acting user, among users only; any other id arrives a canonical UUID (src/http/path-ids.ts).
    const named = entityId === 'me' ? (entity === 'users' ? principal.userId : null) : entityId
    const id = resolver && named !== null ? await resolver(principal, named) : null
    if (id === null) throw notFound(singular(entity))
    return { organizationId: principal.organizationId, entityType: entity, entityId: id }
  }

  /**
   * The current revision (its text is the metadata exactly as stored, JSON), or `notModified` when `If-None-Match`
   * names it.
   */
  async get(principal: Principal, entity: MetadataEntity, entityId: string, conditions: MetadataConditions): Promise<MetadataRevision | { notModified: true; etag: string }> {
    const ifNoneMatch = condition(conditions.ifNoneMatch, 'if-none-match')
    const revision = await this.current(await this.keyFor(principal, entity, entityId))
    if (!revision) throw metadataNotFound()
    if (ifNoneMatch !== undefined && conditionMatches(ifNoneMatch, revision.etag)) return { notModified: true, etag: revision.etag }
    return revision
  }

  /** Creates or replaces the whole metadata. */
  async put(principal: Principal, entity: MetadataEntity, entityId: string, body: unknown, conditions: MetadataConditions): Promise<MetadataResult & { created: boolean }> {
    const ifMatch = condition(conditions.ifMatch, 'if-match')
    const ifNoneMatch = condition(conditions.ifNoneMatch, 'if-none-match')
    if (ifNoneMatch !== undefined && ifNoneMatch !== '*') {
      throw requestInvalid('headers', [{ property: 'if-none-match', rule: 'enum', ruleParams: { allowedValues: ['*'] } }])
    }
    const checked = checkMetadata(body)
    if ('error' in checked) throw checked.error
    const key = await this.keyFor(principal, entity, entityId)
    const revision = revisionOf(checked.text)
    const now = new Date()

    if (ifMatch !== undefined) {
      // Both conditions at once can never hold: If-None-Match: * needs no metadata, If-Match needs some.
      if (ifNoneMatch !== undefined) throw preconditionFailed('If-Match and If-None-Match: * cannot both hold')
      const replaced = await this.announcing(key, (announce) => repository.replaceMetadataIf(this.db, key, ifMatch, revision, now, announce))
      if (!replaced) throw preconditionFailed()
      return { ...resultOf(revision), created: false }
    }
    if (ifNoneMatch === '*') {
      if (!(await repository.insertMetadata(this.db, key, revision, now))) throw preconditionFailed('Metadata already exists (If-None-Match: *)')
      return { ...resultOf(revision), created: true }
    }
    const { created } = await this.announcing(key, (announce) => repository.upsertMetadata(this.db, key, revision, now, announce))
    return { ...resultOf(revision), created }
  }

  /** Applies an RFC 6902 patch atomically: every operation or none. */
  async patch(principal: Principal, entity: MetadataEntity, entityId: string, operations: unknown[], conditions: MetadataConditions): Promise<MetadataResult> {
    const ifMatch = condition(conditions.ifMatch, 'if-match')
    const key = await this.keyFor(principal, entity, entityId)
    return this.announcing(key, (announce) => this.db.transaction().execute(async (tx) => {
      const current = await repository.findMetadata(tx, key, { lock: true })
      if (ifMatch !== undefined && !conditionMatches(ifMatch, current?.etag)) throw preconditionFailed()
      if (!current) throw metadataNotFound()

      const outcome = applyJsonPatch(JSON.parse(current.text), operations)
      if ('failure' in outcome) {
        const { index, operation, reason } = outcome.failure
        throw new DomainError('json_patch_failed', 'The entity metadata patch operation failed to apply', {
          details: {
            ...(index !== undefined || operation ? { operation: { ...(index !== undefined ? { index } : {}), ...operation } } : {}),
            reason,
          },
        })
      }
      const patched = outcome.document
      if (patched === null || typeof patched !== 'object' || Array.isArray(patched) || Object.keys(patched).length === 0) {
        throw new DomainError('json_patch_failed', 'The entity metadata patch operation failed to apply', {
          details: { reason: 'The patched metadata must remain a JSON object with at least one property' },
        })
      }
      const text = JSON.stringify(patched)
      if (characterCount(text) > METADATA_MAX_CHARACTERS) throw metadataTooLarge()
      const revision = revisionOf(text)
      await repository.replaceMetadataIf(tx, key, [current.etag], revision, new Date(), announce)
      return resultOf(revision)
    }))
  }

  /** Removes all metadata of the entity. */
  async delete(principal: Principal, entity: MetadataEntity, entityId: string, conditions: MetadataConditions): Promise<void> {
    const ifMatch = condition(conditions.ifMatch, 'if-match')
    const key = await this.keyFor(principal, entity, entityId)
    if (await this.announcing(key, (announce) => repository.deleteMetadataIf(this.db, key, ifMatch, announce))) return
    throw ifMatch !== undefined ? preconditionFailed() : metadataNotFound()
  }
}

/**
 * Stores the metadata given when an entity is created, inside the creating transaction. Metadata never
 * fails a creation: when it is invalid, nothing is stored and the error is returned for `errors.metadata`.
 */
export async function attachInitialMetadata(
  tx: Executor,
  key: MetadataKey,
  value: unknown,
  at: Date,
): Promise<DomainError | null> {
  const checked = checkMetadata(value)
  if ('error' in checked) return checked.error
  await repository.insertMetadata(tx, key, revisionOf(checked.text), at)
  return null
}
