import { createHmac, timingSafeEqual } from 'node:crypto'
import { isUuid } from '../../lib/ids.ts'

/**
 * The management link and the portal session it opens carry their own authorization: a payload (which link, which
 * organization, until when) and an HMAC-SHA256 of it under a key derived for this purpose. `kind` keeps a link from
 * being used as a session and the other way round.
 */
export type PortalTokenKind = 'link' | 'session'

export interface PortalGrant {
  kind: PortalTokenKind
  linkId: string
  organizationId: string
  expiresAt: Date
}

export type PortalTokenCheck = { ok: PortalGrant } | { problem: 'malformed' | 'signature' | 'expired'; expiresAt?: Date }

function mac(key: Buffer, payload: string): Buffer {
  return createHmac('sha256', key).update(payload).digest()
}

export function signPortalToken(key: Buffer, grant: PortalGrant): string {
  const payload = Buffer.from(JSON.stringify({ k: grant.kind, l: grant.linkId, o: grant.organizationId, e: grant.expiresAt.getTime() })).toString('base64url')
  return `${payload}.${mac(key, payload).toString('base64url')}`
}

/** Checks a token of the expected kind: signed with `key`, well formed, not expired at `now`. */
export function verifyPortalToken(key: Buffer, token: string, kind: PortalTokenKind, now: Date): PortalTokenCheck {
  const match = /^([A-Za-z0-9_-]{1,512})\.([A-Za-z0-9_-]{43})$/.exec(token)
  if (!match) return { problem: 'malformed' }
  const [, payload, signature] = match as unknown as [string, string, string]
  // Compared as text: one signature has one spelling (base64url's last character carries unused bits, which decoding
  // would ignore).
  if (!timingSafeEqual(Buffer.from(signature), Buffer.from(mac(key, payload).toString('base64url')))) return { problem: 'signature' }
  let decoded: unknown
  try {
    decoded = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'))
  } catch {
    return { problem: 'malformed' }
  }
  const { k, l, o, e } = (decoded ?? {}) as Record<string, unknown>
  if (k !== kind || typeof l !== 'string' || !isUuid(l) || typeof o !== 'string' || !isUuid(o) || !Number.isSafeInteger(e)) return { problem: 'malformed' }
  const expiresAt = new Date(e as number)
  if (now.getTime() >= expiresAt.getTime()) return { problem: 'expired', expiresAt }
  return { ok: { kind, linkId: l, organizationId: o, expiresAt } }
}
