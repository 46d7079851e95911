import { createHmac, timingSafeEqual } from 'node:crypto'

/**
 * Signed upload forms and download links: the signature is their only authorization, so they are bound to one
 * file of one organization, to what may be uploaded, and to an expiry.
 */


export interface UploadPolicy {
  fileId: string
  organizationId: string
  contentType: string
  minSize: number
  maxSize: number
  expiresAt: Date
}

export interface DownloadGrant {
  fileId: string
  organizationId: string
  expiresAt: Date
}

export type Verified<T> = { ok: T } | { problem: 'malformed' | 'signature' | 'expired'; expiresAt?: Date }

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

function sign(key: Buffer, text: string): string {
  return createHmac('sha256', key).update(text).digest('hex')
}

function signatureMatches(key: Buffer, text: string, signature: string): boolean {
  if (!/^[0-9a-f]{64}$/.test(signature)) return false
  return timingSafeEqual(Buffer.from(sign(key, text), 'hex'), Buffer.from(signature, 'hex'))
}

function decode(text: string): Record<string, unknown> | null {
  if (!/^[A-Za-z0-9_-]{1,4096}$/.test(text)) return null
  try {
    const value = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as unknown
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null
  } catch {
    return null
  }
}

const isSize = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0

/** Signs the policy of an upload form: the `policy` and `signature` fields the form carries. */
export function signUploadPolicy(key: Buffer, policy: UploadPolicy): { policy: string; signature: string } {
  const text = Buffer.from(
    JSON.stringify({
      file: policy.fileId,
      organization: policy.organizationId,
      contentType: policy.contentType,
      size: [policy.minSize, policy.maxSize],
      expires: policy.expiresAt.toISOString(),
    }),
  ).toString('base64url')
  return { policy: text, signature: sign(key, text) }
}

/** Checks an upload form's policy: signed by this key, well formed, and not expired at `now`. */
export function verifyUploadPolicy(key: Buffer, policy: string, signature: string, now: Date): Verified<UploadPolicy> {
  const decoded = decode(policy)
  if (decoded === null) return { problem: 'malformed' }
  if (!signatureMatches(key, policy, signature)) return { problem: 'signature' }
  const { file, organization, contentType, size, expires } = decoded
  const expiresAt = typeof expires === 'string' ? new Date(expires) : new Date(Number.NaN)
  if (
    typeof file !== 'string' || !UUID.test(file) || typeof organization !== 'string' || !UUID.test(organization) ||
    typeof contentType !== 'string' || !Array.isArray(size) || size.length !== 2 || !isSize(size[0]) || !isSize(size[1]) ||
    Number.isNaN(expiresAt.getTime())
  ) {
    return { problem: 'malformed' }
  }
  if (now.getTime() >= expiresAt.getTime()) return { problem: 'expired', expiresAt }
  return { ok: { fileId: file, organizationId: organization, contentType, minSize: size[0], maxSize: size[1], expiresAt } }
}

/** A download link's token: `<payload>.<signature>`. */
export function signDownload(key: Buffer, grant: DownloadGrant): string {
  const payload = Buffer.from(
    JSON.stringify({ file: grant.fileId, organization: grant.organizationId, expires: grant.expiresAt.toISOString() }),
  ).toString('base64url')
  return `${payload}.${sign(key, payload)}`
}

export function verifyDownload(key: Buffer, token: string, now: Date): Verified<DownloadGrant> {
  const [payload, signature, extra] = token.split('.')
  if (payload === undefined || signature === undefined || extra !== undefined) return { problem: 'malformed' }
  const decoded = decode(payload)
  if (decoded === null) return { problem: 'malformed' }
  if (!signatureMatches(key, payload, signature)) return { problem: 'signature' }
  const { file, organization, expires } = decoded
  const expiresAt = typeof expires === 'string' ? new Date(expires) : new Date(Number.NaN)
  if (typeof file !== 'string' || !UUID.test(file) || typeof organization !== 'string' || !UUID.test(organization) || Number.isNaN(expiresAt.getTime())) {
    return { problem: 'malformed' }
  }
  if (now.getTime() >= expiresAt.getTime()) return { problem: 'expired', expiresAt }
  return { ok: { fileId: file, organizationId: organization, expiresAt } }
}
