import {
  ACT_ON_BEHALF_OF_SCOPE,
  notForWidgetSessions,
  parseOnBehalfOf,
  requiredScopes,
  requireScopes,
  requireSubject,
  type Subject,
  type Principal,
  type RouteAuth,
} from '../../http/principal.ts'
import { bearerToken } from '../../lib/bearer.ts'
import { DomainError, notFound, OAuthError, requestInvalid } from '../../lib/errors.ts'
import type { ClientsService } from './clients.service.ts'
import { grantedScopes } from './clients.service.ts'
import { TokenVerificationError, type AccessTokenClaims, type TokenSigner } from './tokens.ts'

export interface TokenRequest {
  authorization: string | undefined
  form: Record<string, unknown>
}

export interface TokenResponse {
  access_token: string
  token_type: 'Bearer'
  expires_in: number
  scope: string
  organizationId: string
}

/** Resolves the user an X-On-Behalf-Of header names, within one organization. */
export interface UserDirectory {
  findUserType(organizationId: string, userId: string): Promise<'individual' | 'business' | null>
}

// RFC 6749 Appendix A.4: scope-token = 1*( %x21 / %x23-5B / %x5D-7E )
const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]+$/

/** The two parts of an HTTP Basic header, still form-encoded; undefined when it is not one. */
function splitBasic(header: string | undefined): [string, string] | undefined {
  const match = header === undefined ? null : /^Basic ([A-Za-z0-9+/=]+)$/i.exec(header.trim())
  if (!match) return undefined
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8')
  const separator = decoded.indexOf(':')
  return separator < 0 ? undefined : [decoded.slice(0, separator), decoded.slice(separator + 1)]
}

/** The client id an HTTP Basic header names, without checking anything; for keying rate limits. */
export function basicClientId(header: string | undefined): string | undefined {
  return splitBasic(header)?.[0]
}

function readBasicCredentials(header: string): { clientId: string; clientSecret: string } {
  const parts = splitBasic(header)
  // RFC 6749 §2.3.1: both parts are form-urlencoded before being joined.
  try {
    if (parts) {
      const [clientId, clientSecret] = parts.map((part) => decodeURIComponent(part.replace(/\+/g, ' '))) as [string, string]
      return { clientId, clientSecret }
    }
  } catch {
    // Malformed percent-encoding: reported below like any unreadable header.
  }
  throw new OAuthError('invalid_client', 'Client id and secret could not be extracted from the Authorization header')
}

function optionalString(form: Record<string, unknown>, name: string): string | undefined {
  const value = form[name]
  if (value === undefined) return undefined
  if (typeof value !== 'string') throw new OAuthError('invalid_request', `Parameter '${name}' must be given once, as a string`)
  return value
}

export class AuthService {
  private readonly clients: ClientsService
  private readonly signer: TokenSigner
  private readonly users: UserDirectory
  private readonly ttlSeconds: number

  constructor(deps: { clients: ClientsService; signer: TokenSigner; users: UserDirectory; ttlSeconds: number }) {
    this.clients = deps.clients
    this.signer = deps.signer
    this.users = deps.users
    this.ttlSeconds = deps.ttlSeconds
  }

  /** The client credentials grant (RFC 6749 §4.4) with client authentication by Basic or by form fields. */
  async issueToken(request: TokenRequest): Promise<TokenResponse> {
    const { form } = request
    const formClientId = optionalString(form, 'client_id')
    const formClientSecret = optionalString(form, 'client_secret')
    const grantType = optionalString(form, 'grant_type')
    const scope = optionalString(form, 'scope')

    if (request.authorization !== undefined && (formClientId !== undefined || formClientSecret !== undefined)) {
      throw new OAuthError('invalid_request', 'Use one client authentication method: the Authorization header or form fields, not both')
    }
    let credentials: { clientId: string; clientSecret: string }
    if (request.authorization !== undefined) {
      credentials = readBasicCredentials(request.authorization)
    } else if (formClientId !== undefined && formClientSecret !== undefined) {
      credentials = { clientId: formClientId, clientSecret: formClientSecret }
    } else {
      throw new OAuthError('invalid_client', 'Client authentication is required: HTTP Basic or client_id and client_secret form fields')
    }

    if (grantType === undefined || grantType === '') throw new OAuthError('invalid_request', "Body must have required property 'grant_type'")

    const client = await this.clients.authenticate(credentials.clientId, credentials.clientSecret)
    if (!client) throw new OAuthError('invalid_client', 'Client does not exist or secret is incorrect')

    if (grantType !== 'client_credentials') throw new OAuthError('unsupported_grant_type', 'Grant type not supported')

    const granted = grantedScopes(client.scopes, this.clients.scopes)
    let scopes = granted
    // `*` asks for every scope the client holds (what browser apps written for the upstream service send).
    if (scope !== undefined && scope.trim() !== '' && scope.trim() !== '*') {
      const requested = [...new Set(scope.trim().split(/ +/))]
      if (requested.some((s) => !SCOPE_TOKEN.test(s))) throw new OAuthError('invalid_request', "Parameter 'scope' is malformed")
      const unknown = requested.filter((s) => !this.clients.scopes.has(s))
      if (unknown.length > 0) throw new OAuthError('invalid_scope', `Unknown scope(s): ${unknown.join(' ')}`)
      const grantedSet = new Set(granted)
      if (requested.some((s) => !grantedSet.has(s))) {
        throw new OAuthError('invalid_scope', 'Requested scopes must be equal or narrower than the scopes granted to the client')
      }
      scopes = requested
    }

    const accessToken = await this.signer.sign({ clientId: client.id, organizationId: client.organization_id, scopes, ttlSeconds: this.ttlSeconds })
    return { access_token: accessToken, token_type: 'Bearer', expires_in: this.ttlSeconds, scope: scopes.join(' '), organizationId: client.organization_id }
  }

  /** Turns `Authorization: Bearer` (and `X-On-Behalf-Of`) into a principal allowed to call the route. */
  async authenticateRequest(headers: { authorization?: string; onBehalfOf?: string }, route: RouteAuth, params?: unknown): Promise<Principal> {
    const claims = await this.verifyBearer(headers.authorization)
    const routeScopes = requiredScopes(route, params)
    const scopes = claims.scopes
    const base = { organizationId: claims.organizationId, clientId: claims.clientId, scopes }

    if (await this.clients.isRevoked(claims.clientId)) {
      throw new DomainError('token_revoked', 'The access token has been revoked')
    }

    if (claims.userId !== undefined) return this.widgetPrincipal(claims, headers.onBehalfOf, routeScopes, route)

    if (headers.onBehalfOf === undefined) {
      requireScopes(routeScopes, scopes)
      requireSubject('client', route.subjects)
      return { ...base, subject: 'client', userId: null }
    }

    const target = parseOnBehalfOf(headers.onBehalfOf)
    if (!target) {
      throw requestInvalid('headers', [{ property: 'x-on-behalf-of', rule: 'pattern', ruleParams: { pattern: '^(user|client)\\s<uuid>$' } }])
    }
    if (target.kind === 'client') {
      if (target.id !== claims.clientId) throw notFound('client')
      requireScopes(routeScopes, scopes)
      requireSubject('client', route.subjects)
      return { ...base, subject: 'client', userId: null }
    }

    requireScopes([ACT_ON_BEHALF_OF_SCOPE, ...routeScopes], scopes)
    const subject = await this.userSubject(claims.organizationId, target.id, route)
    return { ...base, subject, userId: target.id }
  }

  /**
   * A widget session's token acts for its user alone: `X-On-Behalf-Of`, if sent, must name that user (another
   * is, for the session, a user that does not exist), and only the session's scopes are held.
   */
  private async widgetPrincipal(claims: AccessTokenClaims, onBehalfOf: string | undefined, routeScopes: readonly string[], route: RouteAuth): Promise<Principal> {
    const userId = claims.userId!
    if (onBehalfOf !== undefined) {
      const target = parseOnBehalfOf(onBehalfOf)
      if (!target) throw requestInvalid('headers', [{ property: 'x-on-behalf-of', rule: 'pattern', ruleParams: { pattern: '^(user|client)\\s<uuid>$' } }])
      if (target.kind !== 'user' || target.id !== userId) throw notFound('user')
    }
    if (route.widgetSessions !== true) throw notForWidgetSessions(routeScopes, claims.scopes)
    requireScopes(routeScopes, claims.scopes)
    const subject = await this.userSubject(claims.organizationId, userId, route)
    return { organizationId: claims.organizationId, clientId: claims.clientId, scopes: claims.scopes, subject, userId, widget: { ...claims.widget!, expiresAt: claims.expiresAt } }
  }

  /**
   * The subject of an active user of the organization, refused (403) when the route does not allow it, named as it
   * is: `user:business` for a business, also on an operation for clients only. Where users are allowed, one that does
   * not exist is 404; on an operation for clients only, every user is refused alike (a user it does not know as
   * `user:individual`), so that the operation answers no status it does not declare.
   */
  private async userSubject(organizationId: string, userId: string, route: RouteAuth): Promise<Subject> {
    const type = await this.users.findUserType(organizationId, userId)
    const subject = type === 'business' ? 'user:business' : 'user:individual'
    if (type === null && route.subjects.some((s) => s.startsWith('user:'))) throw notFound('user')
    requireSubject(subject, route.subjects)
    return subject
  }

  /** Refuses with `token_invalid` or `token_expired`; the edge adds the RFC 6750 `WWW-Authenticate` challenge. */
  private async verifyBearer(authorization: string | undefined): Promise<AccessTokenClaims> {
    // The token's own syntax is checked by its verification.
    const token = bearerToken(authorization)
    if (token === '') {
      throw new DomainError('token_invalid', 'The access token is invalid')
    }
    try {
      return await this.signer.verify(token)
    } catch (error) {
      if (error instanceof TokenVerificationError) {
        throw new DomainError(error.reason, error.message)
      }
      throw error
    }
  }
}
