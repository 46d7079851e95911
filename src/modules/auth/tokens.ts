import { createPrivateKey, createPublicKey, randomUUID, type KeyObject } from 'node:crypto'
import type { WidgetBinding } from '../../http/principal.ts'
import { calculateJwkThumbprint, errors as joseErrors, exportJWK, jwtVerify, SignJWT, type JWK } from 'jose'

const ALGORITHM = 'ES256'
const MAX_VERIFIED_TOKENS = 10_000
/** RFC 9068 §2.1: access tokens carry this media type so they cannot be confused with other JWTs. */
const TOKEN_TYPE = 'at+jwt'

export interface AccessTokenClaims {
  clientId: string
  organizationId: string
  scopes: ReadonlySet<string>
  expiresAt: number
  /** A widget session's token acts for one user, for one widget flow. */
  userId?: string
  widget?: WidgetBinding
}

export type TokenFailure = 'token_invalid' | 'token_expired'

export class TokenVerificationError extends Error {
  readonly reason: TokenFailure
  constructor(reason: TokenFailure, message: string) {
    super(message)
    this.reason = reason
  }
}

/** Signs and verifies access tokens with one ES256 key; verification needs no database. */
export class TokenSigner {
  readonly issuer: string
  readonly audience: string
  private readonly privateKey: KeyObject
  private readonly publicKey: KeyObject
  private publicJwk: (JWK & { kid: string }) | undefined
  /**
   * Tokens whose signature was already checked, by signature. A token is immutable, so it needs checking
   * once; expiry is still checked on every use. Keyed by the signature (short) and confirmed against the
   * whole token, so a different token never matches.
   */
  private readonly verified = new Map<string, { token: string; claims: AccessTokenClaims }>()

  constructor(privateKeyPem: string, issuer: string, audience: string) {
    this.privateKey = createPrivateKey(privateKeyPem)
    if (this.privateKey.asymmetricKeyType !== 'ec' || this.privateKey.asymmetricKeyDetails?.namedCurve !== 'prime256v1') {
      throw new Error('The token signing key must be an EC P-256 private key (ES256)')
    }
    this.publicKey = createPublicKey(this.privateKey)
    this.issuer = issuer
    this.audience = audience
  }

  async jwk(): Promise<JWK & { kid: string }> {
    if (!this.publicJwk) {
      const jwk = await exportJWK(this.publicKey)
      this.publicJwk = { ...jwk, kid: await calculateJwkThumbprint(jwk), alg: ALGORITHM, use: 'sig' }
    }
    return this.publicJwk
  }

  async sign(input: { clientId: string; organizationId: string; scopes: string[]; ttlSeconds: number; userId?: string; widget?: WidgetBinding }): Promise<string> {
    const { kid } = await this.jwk()
    const now = Math.floor(Date.now() / 1000)
    return new SignJWT({
      client_id: input.clientId,
      scope: input.scopes.join(' '),
      organization_id: input.organizationId,
      ...(input.userId !== undefined ? { user_id: input.userId } : {}),
      ...(input.widget !== undefined ? { widget: input.widget } : {}),
    })
      .setProtectedHeader({ alg: ALGORITHM, typ: TOKEN_TYPE, kid })
      .setIssuer(this.issuer)
      .setSubject(input.clientId)
      .setAudience(this.audience)
      .setIssuedAt(now)
      .setExpirationTime(now + input.ttlSeconds)
      .setJti(randomUUID())
      .sign(this.privateKey)
  }

  async verify(token: string): Promise<AccessTokenClaims> {
    const signature = token.slice(token.lastIndexOf('.') + 1)
    const known = this.verified.get(signature)
    if (known && known.token === token) {
      if (known.claims.expiresAt > Date.now() / 1000) return known.claims
      this.verified.delete(signature)
      throw new TokenVerificationError('token_expired', 'The access token has expired')
    }
    const claims = await this.verifySignature(token)
    if (this.verified.size >= MAX_VERIFIED_TOKENS) this.verified.delete(this.verified.keys().next().value!)
    this.verified.set(signature, { token, claims })
    return claims
  }

  private async verifySignature(token: string): Promise<AccessTokenClaims> {
    try {
      const { payload } = await jwtVerify(token, this.publicKey, {
        algorithms: [ALGORITHM],
        issuer: this.issuer,
        audience: this.audience,
        typ: TOKEN_TYPE,
        requiredClaims: ['sub', 'exp', 'iat', 'jti', 'client_id', 'scope', 'organization_id'],
      })
      const { client_id: clientId, organization_id: organizationId, scope, exp, user_id: userId, widget } = payload
      if (typeof clientId !== 'string' || typeof organizationId !== 'string' || typeof scope !== 'string' || typeof exp !== 'number') {
        throw new TokenVerificationError('token_invalid', 'The access token is invalid')
      }
      const claims: AccessTokenClaims = { clientId, organizationId, scopes: new Set(scope === '' ? [] : scope.split(' ')), expiresAt: exp }
      // A session token names its user and its widget together, or it is not one of ours.
      if (userId !== undefined || widget !== undefined) {
        if (typeof userId !== 'string' || !isWidgetBinding(widget)) throw new TokenVerificationError('token_invalid', 'The access token is invalid')
        claims.userId = userId
        claims.widget = widget
      }
      return claims
    } catch (error) {
      if (error instanceof TokenVerificationError) throw error
      if (error instanceof joseErrors.JWTExpired) throw new TokenVerificationError('token_expired', 'The access token has expired')
      throw new TokenVerificationError('token_invalid', 'The access token is invalid')
    }
  }
}

function isWidgetBinding(value: unknown): value is WidgetBinding {
  if (typeof value !== 'object' || value === null) return false
  const { kind, flow, quoteId, domain, requestForInformationId, processes } = value as Record<string, unknown>
  const optionalString = (field: unknown) => field === undefined || typeof field === 'string'
  return (kind === 'payment' || kind === 'travel-rule' || kind === 'kyc') && typeof flow === 'string' &&
    optionalString(quoteId) && optionalString(domain) && optionalString(requestForInformationId) &&
    (processes === undefined || (Array.isArray(processes) && processes.every((process) => typeof process === 'string')))
}
