import { createHash, createPrivateKey, createPublicKey, randomUUID, sign as cryptoSign, type KeyObject } from 'node:crypto'
import type { WidgetBinding } from '../../http/principal.ts'
import { decodeProtectedHeader, errors as joseErrors, jwtVerify, type JWK } from 'jose'

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

/** The public half of a signing key as a JWK (RFC 7517), as the key set publishes it. */
export type PublicJwk = JWK & { kid: string; alg: string; use: string }

/** One ES256 key: its private half signs, its public half verifies and is published; `kid` is its RFC 7638 thumbprint. */
export class SigningKey {
  readonly kid: string
  readonly privateKey: KeyObject
  readonly publicKey: KeyObject
  readonly jwk: PublicJwk
  /** The protected header of the tokens it signs, base64url-encoded (the same for every token). */
  readonly encodedHeader: string

  constructor(privateKeyPem: string) {
    this.privateKey = createPrivateKey(privateKeyPem)
    if (this.privateKey.asymmetricKeyType !== 'ec' || this.privateKey.asymmetricKeyDetails?.namedCurve !== 'prime256v1') {
      throw new Error('The token signing key must be an EC P-256 private key (ES256)')
    }
    this.publicKey = createPublicKey(this.privateKey)
    const { crv, kty, x, y } = this.publicKey.export({ format: 'jwk' })
    // RFC 7638: the required members, in lexicographic order, without whitespace.
    this.kid = createHash('sha256').update(JSON.stringify({ crv, kty, x, y })).digest('base64url')
    this.jwk = { kty: kty!, crv: crv!, x: x!, y: y!, kid: this.kid, alg: ALGORITHM, use: 'sig' }
    this.encodedHeader = Buffer.from(JSON.stringify({ alg: ALGORITHM, typ: TOKEN_TYPE, kid: this.kid })).toString('base64url')
  }
}

/** The keys a signer works with: one fixed key, or a key ring that changes while the process runs. */
export interface SigningKeys {
  /** The key that signs now. */
  signing(): SigningKey
  /** The key of this id whose tokens verify; undefined for an unknown or retired key. */
  find(kid: string): SigningKey | undefined
  /** Every key whose tokens verify, or soon will: what the key set publishes. */
  published(): readonly SigningKey[]
  /**
   * Reads the keys again unless they were read after `requestedAt`; a token naming an unknown key may come from
   * a key added since this process last read them.
   */
  refresh?(requestedAt: number): Promise<void>
}

function fixedKeys(key: SigningKey): SigningKeys {
  return { signing: () => key, find: (kid) => (kid === key.kid ? key : undefined), published: () => [key] }
}

/**
 * Signs access tokens with the current key of its keys and verifies them with any of them, by the token's `kid`;
 * verification needs no database.
 */
export class TokenSigner {
  readonly issuer: string
  readonly audience: string
  private readonly keys: SigningKeys
  /**
   * Tokens whose signature was already checked, by signature. A token is immutable, so it needs checking
   * once; expiry is still checked on every use, and that its key is still trusted. Keyed by the signature
   * (short) and confirmed against the whole token, so a different token never matches.
   */
  private readonly verified = new Map<string, { token: string; kid: string; claims: AccessTokenClaims }>()

  /** `keys`: a PKCS#8 PEM private key (one fixed key), or the keys of a ring. */
  constructor(keys: string | SigningKeys, issuer: string, audience: string) {
    this.keys = typeof keys === 'string' ? fixedKeys(new SigningKey(keys)) : keys
    this.issuer = issuer
    this.audience = audience
  }

  /** The public keys that verify tokens (JWKS): every key not retired, a new one from before it signs. */
  jwks(): PublicJwk[] {
    return this.keys.published().map((key) => key.jwk)
  }

  /**
   * A signed access token (RFC 9068 JWT, ES256). The signature is made by node:crypto on libuv's thread pool, off the
   * main thread; the header is encoded once per key, the claims once per token.
   */
  async sign(input: { clientId: string; organizationId: string; scopes: string[]; ttlSeconds: number; userId?: string; widget?: WidgetBinding }): Promise<string> {
    const key = this.keys.signing()
    const now = Math.floor(Date.now() / 1000)
    // Registered claims first, as RFC 7519 lists them; then ours.
    const claims = {
      iss: this.issuer,
      sub: input.clientId,
      aud: this.audience,
      exp: now + input.ttlSeconds,
      iat: now,
      jti: randomUUID(),
      client_id: input.clientId,
      scope: input.scopes.join(' '),
      organization_id: input.organizationId,
      ...(input.userId !== undefined ? { user_id: input.userId } : {}),
      ...(input.widget !== undefined ? { widget: input.widget } : {}),
    }
    const signingInput = `${key.encodedHeader}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`
    const signature = await new Promise<Buffer>((resolve, reject) =>
      // RFC 7518 §3.4: the JWS signature of ES256 is R‖S, 32 bytes each (IEEE P1363), not DER.
      cryptoSign('sha256', Buffer.from(signingInput), { key: key.privateKey, dsaEncoding: 'ieee-p1363' }, (error, result) => (error ? reject(error) : resolve(result))),
    )
    return `${signingInput}.${signature.toString('base64url')}`
  }

  async verify(token: string): Promise<AccessTokenClaims> {
    const signature = token.slice(token.lastIndexOf('.') + 1)
    const known = this.verified.get(signature)
    if (known && known.token === token && this.keys.find(known.kid)) {
      if (known.claims.expiresAt > Date.now() / 1000) return known.claims
      this.verified.delete(signature)
      throw new TokenVerificationError('token_expired', 'The access token has expired')
    }
    const key = await this.keyOf(token)
    const claims = await this.verifySignature(token, key)
    if (this.verified.size >= MAX_VERIFIED_TOKENS) this.verified.delete(this.verified.keys().next().value!)
    this.verified.set(signature, { token, kid: key.kid, claims })
    return claims
  }

  /** The key the token names; a key this process has not heard of is looked for once more in the ring. */
  private async keyOf(token: string): Promise<SigningKey> {
    const requestedAt = Date.now()
    let kid: unknown
    try {
      kid = decodeProtectedHeader(token).kid
    } catch {
      throw new TokenVerificationError('token_invalid', 'The access token is invalid')
    }
    if (typeof kid !== 'string' || kid === '') throw new TokenVerificationError('token_invalid', 'The access token is invalid')
    let key = this.keys.find(kid)
    if (!key && this.keys.refresh) {
      await this.keys.refresh(requestedAt)
      key = this.keys.find(kid)
    }
    if (!key) throw new TokenVerificationError('token_invalid', 'The access token is invalid')
    return key
  }

  private async verifySignature(token: string, key: SigningKey): Promise<AccessTokenClaims> {
    try {
      const { payload } = await jwtVerify(token, key.publicKey, {
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
