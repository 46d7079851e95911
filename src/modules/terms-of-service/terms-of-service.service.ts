import type { Db, Executor } from '../../db/schema.ts'
import type { Principal } from '../../http/principal.ts'
import { notFound, operationNotAllowed } from '../../lib/errors.ts'
import { recordEvent } from '../events/index.ts'
import * as repository from './terms-of-service.repository.ts'
import { checkApplicable, checkCatalogue, checkGeneralTerms, matchesFilters, type Acceptor } from './terms-of-service.rules.ts'
import type { ListTermsOfServiceQuery, TermsOfService, TermsOfServiceDefinition } from './terms-of-service.schemas.ts'
import type { UserContext } from '../../http/user-context.ts'

export const TERMS_OF_SERVICE_ACCEPTED_EVENT = 'core.terms-of-service.accepted'

/** What the service needs to know of the user a request acts for. */
export interface AcceptorDirectory {
  getMe(principal: Principal): Promise<{ type: 'individual' | 'business'; address?: { country: string } }>
  /** The user, read (and locked) in the caller's transaction: a user being created is not visible outside it. */
  lockActive(tx: Executor, organizationId: string, userId: string): Promise<{ type: 'individual' | 'business'; address?: { country: string } } | null>
}

/** The end-user context headers (`X-Service-User-*`) of the accepting request. */
export type AcceptanceContext = UserContext

function present(terms: TermsOfServiceDefinition, acceptedAt?: Date): TermsOfService {
  return {
    code: terms.code,
    type: terms.type,
    ...(terms.countries ? { countries: [...terms.countries] } : {}),
    ...(terms.userTypes ? { userTypes: [...terms.userTypes] } : {}),
    modifiedAt: new Date(terms.modifiedAt).toISOString(),
    ...(terms.url ? { url: terms.url } : {}),
    ...(acceptedAt ? { acceptedAt: acceptedAt.toISOString() } : {}),
  }
}

const definedOnly = (context: AcceptanceContext): Record<string, string> =>
  Object.fromEntries(Object.entries(context).filter((entry): entry is [string, string] => entry[1] !== undefined))

/**
 * The terms of service of the platform (an operator-editable catalogue) and who accepted which: general terms
 * when a user is created, the others (e.g. a unique account number) later, by the user.
 */
export class TermsOfServiceService {
  private readonly db: Db
  private readonly catalogue: readonly TermsOfServiceDefinition[]
  private readonly byCode: ReadonlyMap<string, TermsOfServiceDefinition>
  private readonly users: AcceptorDirectory

  constructor(db: Db, catalogue: readonly TermsOfServiceDefinition[], users: AcceptorDirectory) {
    checkCatalogue(catalogue)
    this.db = db
    this.catalogue = catalogue
    this.byCode = new Map(catalogue.map((terms) => [terms.code, terms]))
    this.users = users
  }

  /** Acceptance times of the acting user; none when the request does not act for a user. */
  private async acceptancesFor(principal: Principal): Promise<Map<string, Date>> {
    if (principal.userId === null) return new Map()
    return repository.acceptancesOf(this.db, principal.organizationId, principal.userId)
  }

  async list(principal: Principal, filters: ListTermsOfServiceQuery): Promise<TermsOfService[]> {
    const accepted = await this.acceptancesFor(principal)
    return this.catalogue.filter((terms) => matchesFilters(terms, filters)).map((terms) => present(terms, accepted.get(terms.code)))
  }

  private find(code: string): TermsOfServiceDefinition {
    const terms = this.byCode.get(code)
    if (!terms) throw notFound('terms-of-service', { code })
    return terms
  }

  async get(principal: Principal, code: string): Promise<TermsOfService> {
    const terms = this.find(code)
    return present(terms, (await this.acceptancesFor(principal)).get(terms.code))
  }

  /** The acting user accepts the terms: once, and only terms that apply to their type and residence. */
  async accept(principal: Principal, code: string, context: AcceptanceContext): Promise<TermsOfService> {
    if (context.ip === undefined) throw operationNotAllowed('Request not allowed due to missing user context', ['missing-user-ip-header'])
    const terms = this.find(code)
    const user = await this.users.getMe(principal)
    const acceptor: Acceptor = { type: user.type, country: user.address?.country || undefined }
    const problem = checkApplicable(terms, acceptor)
    if (problem) throw problem

    const userId = principal.userId!
    const acceptedAt = new Date()
    const accepted = await this.db.transaction().execute(async (tx) => {
      const inserted = await repository.insertAcceptance(tx, { organizationId: principal.organizationId, userId, code, acceptedAt, context: definedOnly(context) })
      if (inserted) {
        await recordEvent(tx, {
          organizationId: principal.organizationId,
          type: TERMS_OF_SERVICE_ACCEPTED_EVENT,
          subject: { type: 'terms-of-service', id: code },
          userId,
          data: { termsOfService: { code, type: terms.type, modifiedAt: present(terms).modifiedAt, acceptedAt: acceptedAt.toISOString() } },
          occurredAt: acceptedAt,
        })
      }
      return inserted
    })
    if (!accepted) throw operationNotAllowed('The terms of service have already been accepted', ['terms-of-service-already-accepted'])
    return present(terms, acceptedAt)
  }

  /**
   * Records the general terms a new user agreed to, inside the transaction that creates the user (so a user
   * never exists without their acceptance). Terms other than those of the user's country of residence are
   * refused (409 `terms_of_service_mismatch`), and the user is not created.
   */
  async recordAtCreation(tx: Executor, acceptance: { organizationId: string; userId: string; code: string; at: Date; context: AcceptanceContext }): Promise<void> {
    const user = await this.users.lockActive(tx, acceptance.organizationId, acceptance.userId)
    if (!user) throw notFound('user')
    const mismatch = checkGeneralTerms(this.catalogue, acceptance.code, { type: user.type, country: user.address?.country || undefined })
    if (mismatch) throw mismatch
    await repository.insertAcceptance(tx, {
      organizationId: acceptance.organizationId,
      userId: acceptance.userId,
      code: acceptance.code,
      acceptedAt: acceptance.at,
      context: definedOnly(acceptance.context),
    })
  }

  /** For the capabilities module: the codes of the terms the user accepted. */
  async acceptedTermsOfService(organizationId: string, userId: string): Promise<Set<string>> {
    return new Set((await repository.acceptancesOf(this.db, organizationId, userId)).keys())
  }
}
