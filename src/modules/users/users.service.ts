import type { ChangeFeed } from '../../db/changes.ts'
import type { Db, Executor, UserRow } from '../../db/schema.ts'
import { InvalidatedCache } from '../../lib/cache.ts'
import { conflict, notFound, operationNotAllowed, type DomainError, type ErrorBody } from '../../lib/errors.ts'
import { isUniqueViolation } from '../../db/errors.ts'
import type { Principal } from '../../http/principal.ts'
import { uuidv7 } from '../../lib/ids.ts'
import { auditObject } from '../audit/index.ts'
import { recordEvent } from '../events/index.ts'
import { attachInitialMetadata } from '../metadata/index.ts'
import * as repository from './users.repository.ts'
import { checkBirthdate, checkPastTimestamp } from './users.rules.ts'
import type { CreateUserBody, DeleteUserBody, User } from './users.schemas.ts'
import type { UserContext } from '../../http/user-context.ts'

/** The end-user context headers (`X-Service-User-*`) of a request. */

export interface Profile {
  termsOfService?: string
  fullName?: string
  birthdate?: string
  birthplace?: { country: string; town: string }
  primaryCitizenship?: string
  otherCitizenships?: string[]
  citizenshipCountry?: string
  address?: { country: string; subdivision?: string; city?: string; line1?: string; line2?: string; postalCode?: string }
  phone?: { number: string; country: string }
  partnerOnboardedAt?: string
  legalEntityType?: string
  name?: string
}

function definedOnly<T extends object>(value: T): T {
  const defined: Record<string, unknown> = {}
  for (const key in value) if (value[key] !== undefined) defined[key] = value[key]
  return defined as T
}

/** The stored profile of a new user: the legacy individual shape is normalized to the current one. */
function profileOf(input: CreateUserBody): Profile {
  if (input.type === 'business') {
    return definedOnly({
      termsOfService: input.termsOfService,
      legalEntityType: input.legalEntityType,
      address: definedOnly({ country: input.country, subdivision: input.subdivision }),
      partnerOnboardedAt: input.partnerOnboardedAt,
    })
  }
  if ('citizenshipCountry' in input) {
    return definedOnly({
      termsOfService: input.termsOfService,
      primaryCitizenship: input.citizenshipCountry,
      citizenshipCountry: input.citizenshipCountry,
      address: definedOnly({ country: input.country, subdivision: input.subdivision }),
      partnerOnboardedAt: input.partnerOnboardedAt,
    })
  }
  return definedOnly({
    termsOfService: input.termsOfService,
    fullName: input.fullName,
    birthdate: input.birthdate,
    primaryCitizenship: input.primaryCitizenship,
    address: definedOnly(input.address),
    phone: input.phone,
  })
}

export function toUser(row: UserRow): User {
  const profile = row.profile as Profile
  const common = { id: row.id, email: row.email, createdAt: row.created_at.toISOString(), updatedAt: row.updated_at.toISOString() }
  if (row.type === 'business') {
    return definedOnly({ ...common, type: 'business' as const, name: profile.name, address: profile.address, partnerOnboardedAt: profile.partnerOnboardedAt })
  }
  return definedOnly({
    ...common,
    type: 'individual' as const,
    fullName: profile.fullName,
    birthdate: profile.birthdate,
    primaryCitizenship: profile.primaryCitizenship ?? '',
    citizenshipCountry: profile.citizenshipCountry,
    address: profile.address ?? { country: '' },
    phone: profile.phone,
    partnerOnboardedAt: profile.partnerOnboardedAt,
  })
}

function checkBusinessRules(input: CreateUserBody, now: Date): DomainError | null {
  if (input.type === 'individual' && 'birthdate' in input && input.birthdate !== undefined) {
    const error = checkBirthdate(input.birthdate, now)
    if (error) return error
  }
  if ('partnerOnboardedAt' in input && input.partnerOnboardedAt !== undefined) {
    return checkPastTimestamp('partnerOnboardedAt', input.partnerOnboardedAt, now)
  }
  return null
}

/** What a new user brings with them, written by another module inside the creating transaction. */
export type UserCreationStep = (
  tx: Executor,
  user: {
    organizationId: string
    id: string
    type: 'individual' | 'business'
    termsOfService: string
    context: UserContext
    /** Where the user lives, as declared (the country never changes; the subdivision may); null when not declared. */
    residence: { country: string; subdivision?: string } | null
  },
  at: Date,
) => Promise<void>

const cacheKey = (organizationId: string, userId: string) => `user:${organizationId}:${userId}`

/** What clients hear about users (webhook event types of the reference). */
export const USER_EVENTS = {
  created: 'core.user.created',
  deleted: 'core.user.deleted',
} as const

export class UsersService {
  private readonly db: Db
  private readonly changes: ChangeFeed
  /** Active users, read on every request that acts for a user; evicted everywhere when a user changes. */
  private readonly active: InvalidatedCache<UserRow>
  /** The API's view of each cached row object (userOf); a row that leaves the cache takes its view with it. */
  private readonly users = new WeakMap<UserRow, User>()
  private readonly creationSteps: UserCreationStep[] = []

  constructor(db: Db, changes: ChangeFeed) {
    this.db = db
    this.changes = changes
    this.active = new InvalidatedCache({ maxEntries: 50_000, ttlMs: 60_000, trusted: () => changes.isLive() })
    changes.subscribe(this.active)
  }

  /** Adds a step to every user creation, in its transaction: the user exists with it or not at all. */
  onCreate(step: UserCreationStep): void {
    this.creationSteps.push(step)
  }

  private findActive(organizationId: string, userId: string): Promise<UserRow | undefined> {
    return this.active.load(cacheKey(organizationId, userId), () => repository.findActiveUser(this.db, organizationId, userId))
  }

  async create(principal: Principal, input: CreateUserBody, context: UserContext): Promise<{ user: User; errors?: { metadata: ErrorBody } }> {
    // The end user's IP is kept with every user for compliance screening; clients must forward it.
    if (context.ip === undefined) {
      throw operationNotAllowed('Request not allowed due to missing user context', ['missing-user-ip-header'])
    }
    const now = new Date()
    const ruleError = checkBusinessRules(input, now)
    if (ruleError) throw ruleError

    const profile = profileOf(input)
    const id = uuidv7(now.getTime())
    auditObject('user', id)
    const row = {
      organization_id: principal.organizationId,
      id,
      type: input.type,
      email: input.email,
      email_key: input.email.toLowerCase(),
      profile: JSON.stringify(profile),
      creation_context: JSON.stringify(definedOnly(context)),
      created_at: now,
      updated_at: now,
    }
    try {
      return await this.db.transaction().execute(async (tx) => {
        await repository.insertUser(tx, row)
        const country = profile.address?.country
        const residence = country ? { country, ...(profile.address?.subdivision ? { subdivision: profile.address.subdivision } : {}) } : null
        const created = { organizationId: row.organization_id, id: row.id, type: row.type, termsOfService: input.termsOfService, context, residence }
        for (const step of this.creationSteps) await step(tx, created, now)
        const metadataError = 'metadata' in input && input.metadata !== undefined
          ? await attachInitialMetadata(tx, { organizationId: principal.organizationId, entityType: 'users', entityId: row.id }, input.metadata, now)
          : null
        const user = toUser({ ...row, profile: profile as Record<string, unknown>, creation_context: context as Record<string, string>, deleted_at: null, deletion_review: null })
        await recordEvent(tx, { organizationId: row.organization_id, type: USER_EVENTS.created, subject: { type: 'user', id: row.id }, userId: row.id, data: { user }, occurredAt: now })
        return metadataError ? { user, errors: { metadata: metadataError.toBody() } } : { user }
      })
    } catch (error) {
      if (isUniqueViolation(error, 'users_email_unique')) {
        throw conflict('email_already_exists', 'The provided email is already in use by another user')
      }
      throw error
    }
  }

  async getMe(principal: Principal): Promise<User> {
    const row = principal.userId === null ? undefined : await this.findActive(principal.organizationId, principal.userId)
    if (!row) throw notFound('user')
    return this.userOf(row)
  }

  /**
   * The user of a row, made once per row object: a cached row (findActive) is the same object until it is evicted,
   * and an app polls its user far more often than the user changes. The answer is only read (serialized).
   */
  private userOf(row: UserRow): User {
    let user = this.users.get(row)
    if (user === undefined) {
      user = toUser(row)
      this.users.set(row, user)
    }
    return user
  }

  async deleteMe(principal: Principal, input: DeleteUserBody, context: UserContext): Promise<void> {
    const userId = principal.userId
    if (userId === null) throw notFound('user')
    const key = cacheKey(principal.organizationId, userId)
    const review = { ...input.review, context: definedOnly(context), clientId: principal.clientId }
    const deleted = await this.db.transaction().execute(async (tx) => {
      const at = new Date()
      const row = await repository.markUserDeleted(tx, principal.organizationId, userId, at, review)
      if (!row) return false
      await this.changes.announce(tx, key)
      await recordEvent(tx, { organizationId: principal.organizationId, type: USER_EVENTS.deleted, subject: { type: 'user', id: userId }, userId, data: { user: toUser(row) }, occurredAt: at })
      return true
    })
    this.changes.evictLocally(key)
    if (!deleted) throw notFound('user')
  }

  /** The user `/core/users/{entityId}/metadata` names: only the acting user. */
  async metadataOwner(principal: Principal, entityId: string): Promise<string | null> {
    return principal.userId !== null && entityId === principal.userId ? principal.userId : null
  }

  /** What an active user declared (email and profile), as KYC processes read it; null when there is no such user. */
  async declared(organizationId: string, userId: string): Promise<{ type: 'individual' | 'business'; email: string; profile: Profile } | null> {
    const row = await this.findActive(organizationId, userId)
    return row ? { type: row.type, email: row.email, profile: row.profile as Profile } : null
  }

  /**
   * Changes what a user declared, in the caller's transaction (a KYC update), and announces it; call `forget`
   * once that transaction committed. Throws 409 `email_already_exists` when another user has the email.
   */
  async changeDeclared(
    tx: Executor,
    organizationId: string,
    userId: string,
    change: { email?: string; profile?: (current: Profile) => Profile },
  ): Promise<void> {
    const row = await repository.lockActiveUser(tx, organizationId, userId)
    if (!row) throw notFound('user')
    try {
      await repository.updateDeclared(tx, organizationId, userId, {
        ...(change.email === undefined ? {} : { email: change.email, email_key: change.email.toLowerCase() }),
        ...(change.profile === undefined ? {} : { profile: JSON.stringify(change.profile(row.profile as Profile)) }),
        updated_at: new Date(),
      })
    } catch (error) {
      if (isUniqueViolation(error, 'users_email_unique')) {
        throw conflict('email_already_exists', 'The provided email is already in use by another user')
      }
      throw error
    }
    await this.changes.announce(tx, cacheKey(organizationId, userId))
  }

  /**
   * Locks an active user in the caller's transaction, for work that must not cross the user's deletion or another
   * run of itself (a deletion waits for that transaction); the user as the API shows it, or null when there is no
   * such active user.
   */
  async lockActive(tx: Executor, organizationId: string, userId: string): Promise<User | null> {
    const row = await repository.lockActiveUser(tx, organizationId, userId)
    return row ? toUser(row) : null
  }

  /**
   * Moves an active user's creation back to `to`, never forward, in the caller's transaction, under the user's lock
   * (so that the caller's checks and writes for that user happen one call at a time), and announces it; call
   * `forget` once that transaction committed. For history imported as if the user had lived it (the sandbox's
   * generated history): statements refuse the months before a user's creation. Throws 404 `entity_not_found`
   * (entity `user`) when there is no such active user.
   */
  async backdateCreation(tx: Executor, organizationId: string, userId: string, to: Date): Promise<void> {
    const row = await repository.lockActiveUser(tx, organizationId, userId)
    if (!row) throw notFound('user')
    if (await repository.backdateCreation(tx, organizationId, userId, to, new Date())) await this.changes.announce(tx, cacheKey(organizationId, userId))
  }

  forget(organizationId: string, userId: string): void {
    this.changes.evictLocally(cacheKey(organizationId, userId))
  }

  /** The type of an active user of the organization, for resolving `X-On-Behalf-Of`. */
  async findUserType(organizationId: string, userId: string): Promise<'individual' | 'business' | null> {
    return (await this.findActive(organizationId, userId))?.type ?? null
  }
}
