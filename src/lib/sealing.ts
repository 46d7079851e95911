import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto'

/**
 * Secrets at rest (provider API keys, shared secrets): AES-256-GCM under the deployment's sealing key.
 *
 * A sealed value is text, `v1.<key id>.<iv>.<ciphertext+tag>` (base64url parts), so it can live in any
 * column and says how to open it. Every value is sealed with a fresh random 96-bit IV and bound by the
 * associated data to where it belongs (e.g. organization, provider, integration, field): copied into another
 * row, it no longer opens. The key id is a short HMAC of the key, not the key: it tells "sealed under another
 * key" apart from "tampered with", which matters when a key is replaced.
 */

const VERSION = 'v1'
const ALGORITHM = 'aes-256-gcm'
const IV_BYTES = 12
const TAG_BYTES = 16
const KEY_BYTES = 32

/** Where a sealed value belongs; its parts become the associated data, in order. */
export type SealingContext = readonly string[]

/** A sealed value that does not open: another key, another context, or altered text. */
export class SealingError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'SealingError'
  }
}

function associatedData(keyId: string, context: SealingContext): Buffer {
  // JSON keeps the parts unambiguous: ['a.b', 'c'] and ['a', 'b.c'] give different data.
  return Buffer.from(JSON.stringify([VERSION, keyId, ...context]), 'utf8')
}

export class Sealer {
  readonly keyId: string
  private readonly key: Buffer

  /** `key`: 32 bytes, or their base64 text (SEALING_KEY, SandboxSecrets.sealingKey). */
  constructor(key: Buffer | string) {
    const bytes = typeof key === 'string' ? Buffer.from(key, 'base64') : Buffer.from(key)
    if (bytes.length !== KEY_BYTES) throw new SealingError(`A sealing key is ${KEY_BYTES} bytes (got ${bytes.length})`)
    this.key = bytes
    this.keyId = createHmac('sha256', bytes).update('tessera sealing key id').digest('base64url').slice(0, 8)
  }

  seal(plaintext: string, context: SealingContext): string {
    const iv = randomBytes(IV_BYTES)
    const cipher = createCipheriv(ALGORITHM, this.key, iv, { authTagLength: TAG_BYTES })
    cipher.setAAD(associatedData(this.keyId, context))
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()])
    return [VERSION, this.keyId, iv.toString('base64url'), body.toString('base64url')].join('.')
  }

  /** The plaintext; throws SealingError when the value was sealed under another key or context, or altered. */
  open(sealed: string, context: SealingContext): string {
    const parts = sealed.split('.')
    if (parts.length !== 4 || parts[0] !== VERSION) throw new SealingError('The sealed value is not in a known format')
    const [, keyId, ivText, bodyText] = parts as [string, string, string, string]
    if (keyId !== this.keyId) {
      throw new SealingError(`The value was sealed under another key (key id ${keyId}; the current key's id is ${this.keyId})`)
    }
    const iv = Buffer.from(ivText, 'base64url')
    const body = Buffer.from(bodyText, 'base64url')
    if (iv.length !== IV_BYTES || body.length < TAG_BYTES) throw new SealingError('The sealed value is not in a known format')
    try {
      const decipher = createDecipheriv(ALGORITHM, this.key, iv, { authTagLength: TAG_BYTES })
      decipher.setAAD(associatedData(keyId, context))
      decipher.setAuthTag(body.subarray(body.length - TAG_BYTES))
      return Buffer.concat([decipher.update(body.subarray(0, body.length - TAG_BYTES)), decipher.final()]).toString('utf8')
    } catch {
      throw new SealingError('The sealed value does not open: it was altered or belongs elsewhere')
    }
  }
}

/** A key for one purpose, derived from the sealing key (HKDF-SHA256), so that it never equals the sealing key. */
export function derivePurposeKey(sealingKeyBase64: string, purpose: string): Buffer {
  return Buffer.from(hkdfSync('sha256', Buffer.from(sealingKeyBase64, 'base64'), Buffer.alloc(0), `tessera/${purpose}`, 32))
}
