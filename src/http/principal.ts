import { ApiError, requestInvalid } from './errors.ts'

/** What a widget session's token is bound to (the widgets module issues them). */
export interface WidgetBinding {
  kind: 'payment' | 'travel-rule' | 'kyc'
  flow: string
  quoteId?: string
  /** The host page's domain the session was opened for, when the client named one. */
  domain?: string
  /** Travel rule: the request for information the session's form answers. */
  requestForInformationId?: string
  /** KYC: the processes the session walks the user through. */
  processes?: string[]
}

export type Subject = 'client' | 'user:individual' | 'user:business'

/** Who is calling: the client organization, its granted scopes, and the user it acts for, if any. */
export interface Principal {
  organizationId: string
  clientId: string
  scopes: ReadonlySet<string>
  subject: Subject
  userId: string | null
  /**
   * Set when the caller is a widget session (its token was issued by `POST /widgets/{kind}/sessions`): the flow it was
   * opened for and what it is bound to: the one quote it may execute, the one request for information it answers, the
   * KYC processes it walks through.
   */
  widget?: WidgetBinding & { expiresAt: number }
}

/** Scopes that depend on a path parameter: e.g. metadata of users needs `core.users.metadata:read`. */
export interface ScopesByParam {
  param: string
  byValue: Record<string, readonly string[]>
}

/** What a route requires; taken from the reference document's `security` and `x-service` subjects. */
export interface RouteAuth {
  scopes: readonly string[] | ScopesByParam
  subjects: readonly Subject[]
  /**
   * Whether a widget session's token may call the route (with its scopes): only the few operations the hosted
   * widgets make. Any other route refuses such a token, whatever its scopes.
   */
  widgetSessions?: boolean
}

/** The scopes a request to the route needs; an unknown parameter value is a 400 like any invalid parameter. */
export function requiredScopes(route: RouteAuth, params: unknown): readonly string[] {
  if (Array.isArray(route.scopes)) return route.scopes
  const { param, byValue } = route.scopes as ScopesByParam
  const value = (params as Record<string, unknown> | undefined)?.[param]
  const scopes = typeof value === 'string' && Object.hasOwn(byValue, value) ? byValue[value] : undefined
  if (!scopes) throw requestInvalid('params', [{ property: param, rule: 'enum', ruleParams: { allowedValues: Object.keys(byValue) } }])
  return scopes
}

export const ACT_ON_BEHALF_OF_SCOPE = 'core.users:act-on-behalf-of'

export function insufficientScopes(required: readonly string[], granted: ReadonlySet<string>): ApiError {
  return new ApiError(403, 'token_insufficient_scopes', 'Authorization failed due to insufficient scopes', {
    security: [{ scheme: 'OAuth2', schemeScopes: [...required], tokenScopes: [...granted] }],
  })
}

/** A widget session's token on a route the widgets do not call: refused as a token without the scopes for it. */
export function notForWidgetSessions(required: readonly string[], granted: ReadonlySet<string>): ApiError {
  return new ApiError(403, 'token_insufficient_scopes', 'A widget session\'s token cannot call this operation', {
    security: [{ scheme: 'OAuth2', schemeScopes: [...required], tokenScopes: [...granted] }],
  })
}

/** Throws unless the token holds every scope the route requires. */
export function requireScopes(required: readonly string[], granted: ReadonlySet<string>): void {
  if (required.some((scope) => !granted.has(scope))) throw insufficientScopes(required, granted)
}

export function subjectNotAllowed(subject: Subject, allowed: readonly Subject[]): ApiError {
  const hint = allowed.some((s) => s.startsWith('user:')) && subject === 'client'
    ? ' Act on behalf of a user with the X-On-Behalf-Of header.'
    : ''
  return new ApiError(403, 'subject_not_allowed', `This operation is not available to subject '${subject}'.${hint}`, {
    subject,
    allowedSubjects: [...allowed],
  })
}

export function requireSubject(subject: Subject, allowed: readonly Subject[]): void {
  if (!allowed.includes(subject)) throw subjectNotAllowed(subject, allowed)
}

/** Parses `X-On-Behalf-Of: user <uuid>` (also `client <uuid>`, naming the calling client itself). */
export function parseOnBehalfOf(value: string): { kind: 'user' | 'client'; id: string } | null {
  const match = /^(user|client)\s([0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[089ab][0-9a-f]{3}-[0-9a-f]{12})$/i.exec(value)
  if (!match) return null
  return { kind: match[1]!.toLowerCase() as 'user' | 'client', id: match[2]!.toLowerCase() }
}
