import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto'

/**
 * Secrets at rest (provider API keys, shared secrets, card numbers): AES-256-GCM under the deployment's sealing keys.
 *
 * A sealed value is text, `v1.<key id>.<iv>.<ciphertext+tag>` (base64url parts), so it can live in any
 * column and says how to open it. Every value is sealed with a fresh random 96-bit IV and bound by the
 * associated data to where it belongs (e.g. organization, provider, integration, field): copied into another
 * row, it no longer opens. The key id is a short HMAC of the key, not the key: it names the key of the ring
 * (src/modules/keys) that opens the value, and tells "sealed under another key" apart from "tampered with".
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

function keyBytes(key: Buffer | string): Buffer {
  const bytes = typeof key === 'string' ? Buffer.from(key, 'base64') : Buffer.from(key)
  if (bytes.length !== KEY_BYTES) throw new SealingError(`A sealing key is ${KEY_BYTES} bytes (got ${bytes.length})`)
  return bytes
}

/** The id a sealed value names its key by: a short HMAC of the key, never the key. */
export function sealingKeyId(key: Buffer | string): string {
  return createHmac('sha256', keyBytes(key)).update('tessera sealing key id').digest('base64url').slice(0, 8)
}

/** One AES-256 key, with its id and the key of the ring it is (or was derived from). */
export class SealingKey {
  readonly id: string
  /** The id of the ring key this one is, or was derived from: what re-sealing and retiring count by. */
  readonly ringId: string
  /** The key itself: never logged, never returned. */
  readonly material: Buffer

  constructor(key: Buffer | string, ringId?: string) {
    this.material = keyBytes(key)
    this.id = sealingKeyId(this.material)
    this.ringId = ringId ?? this.id
  }

  /** The key for one purpose derived from this one (HKDF-SHA256); it still belongs to this key's ring key. */
  derive(purpose: string): SealingKey {
    return new SealingKey(derivePurposeKey(this.material, purpose), this.ringId)
  }
}

/** The keys a sealer works with: the one that seals now, and every one that opens, by id. */
export interface SealingKeySet {
  readonly current: SealingKey
  find(id: string): SealingKey | undefined
}

/** What a sealer draws its keys from: one fixed key, or a key ring that changes while the process runs. */
export interface SealingKeySource {
  /** The keys as they stand now; asked on every seal and open, so it must be cheap. */
  keys(): SealingKeySet
  /** Told when a value names a key the set does not hold: the ring may have grown since it was last read. */
  onUnknownKey?(keyId: string): void
}

function fixedSet(key: SealingKey): SealingKeySet {
  return { current: key, find: (id) => (id === key.id ? key : undefined) }
}

export class Sealer {
  private readonly source: SealingKeySource

  /** `key`: 32 bytes or their base64 text (one key), or a source of keys (a key ring). */
  constructor(key: Buffer | string | SealingKeySource) {
    if (typeof key === 'string' || Buffer.isBuffer(key)) {
      const set = fixedSet(new SealingKey(key))
      this.source = { keys: () => set }
    } else this.source = key
  }

  /** The id of the key that seals now. */
  get keyId(): string {
    return this.source.keys().current.id
  }

  seal(plaintext: string, context: SealingContext): string {
    const key = this.source.keys().current
    const iv = randomBytes(IV_BYTES)
    const cipher = createCipheriv(ALGORITHM, key.material, iv, { authTagLength: TAG_BYTES })
    cipher.setAAD(associatedData(key.id, context))
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()])
    return [VERSION, key.id, iv.toString('base64url'), body.toString('base64url')].join('.')
  }

  /** The plaintext; throws SealingError when the value was sealed under a key not held here, another context, or altered. */
  open(sealed: string, context: SealingContext): string {
    const parts = sealed.split('.')
    if (parts.length !== 4 || parts[0] !== VERSION) throw new SealingError('The sealed value is not in a known format')
    const [, keyId, ivText, bodyText] = parts as [string, string, string, string]
    const keys = this.source.keys()
    const key = keys.find(keyId)
    if (!key) {
      this.source.onUnknownKey?.(keyId)
      throw new SealingError(`The value was sealed under another key (key id ${keyId}; the current key's id is ${keys.current.id})`)
    }
    const iv = Buffer.from(ivText, 'base64url')
    const body = Buffer.from(bodyText, 'base64url')
    if (iv.length !== IV_BYTES || body.length < TAG_BYTES) throw new SealingError('The sealed value is not in a known format')
    try {
      const decipher = createDecipheriv(ALGORITHM, key.material, iv, { authTagLength: TAG_BYTES })
      decipher.setAAD(associatedData(keyId, context))
      decipher.setAuthTag(body.subarray(body.length - TAG_BYTES))
      return Buffer.concat([decipher.update(body.subarray(0, body.length - TAG_BYTES)), decipher.final()]).toString('utf8')
    } catch {
      throw new SealingError('The sealed value does not open: it was altered or belongs elsewhere')
    }
  }

  /** Whether the value is sealed under the key that seals now (re-sealing leaves it as it is). */
  isCurrent(sealed: string): boolean {
    return keyIdOf(sealed) === this.keyId
  }

  /** The value sealed anew under the key that seals now, for the same context; the same text when it already is. */
  reseal(sealed: string, context: SealingContext): string {
    return this.isCurrent(sealed) ? sealed : this.seal(this.open(sealed, context), context)
  }

  /** The ring key a value's key id belongs to; undefined for a key this sealer does not hold. */
  ringKeyOf(keyId: string): string | undefined {
    return this.source.keys().find(keyId)?.ringId
  }
}

/** The key id a sealed value names (undefined when the text is not a sealed value). */
export function keyIdOf(sealed: string): string | undefined {
  const parts = sealed.split('.')
  return parts.length === 4 && parts[0] === VERSION ? parts[1] : undefined
}

/** A key for one purpose, derived from a key (HKDF-SHA256), so that it never equals that key. */
export function derivePurposeKey(key: Buffer | string, purpose: string): Buffer {
  const bytes = typeof key === 'string' ? Buffer.from(key, 'base64') : key
  return Buffer.from(hkdfSync('sha256', bytes, Buffer.alloc(0), `tessera/${purpose}`, 32))
}

/**
 * A module's sealed values, as the key ring's re-seal and retire see them (src/modules/keys). Each module
 * implements it over its own tables only.
 */
export interface SealedValueSet {
  /** What the values are, for reports: `webhook endpoint secrets`. */
  readonly name: string
  /** How many values are sealed under each ring key, by ring key id (`unknown:<key id>` for a key the ring lacks). */
  census(): Promise<Record<string, number>>
  /**
   * Seals anew under the current key up to `limit` values that are not under it, after `cursor` (null: from the
   * start), each in the same transaction as a lock on its row, so that writers running meanwhile are never
   * overwritten. Answers where to go on (null: done) and where values did not open (ids, never values).
   */
  resealBatch(cursor: string | null, limit: number): Promise<{ moved: number; unopenable: string[]; cursor: string | null }>
}

/** Counts of sealed values by the key id they name, added up by ring key (`unknown:<key id>` for a key the sealer lacks). */
export function countByRingKey(sealer: Sealer, rows: readonly { key_id: string; n: number | string }[]): Record<string, number> {
  const counts: Record<string, number> = {}
  for (const row of rows) {
    const key = sealer.ringKeyOf(row.key_id) ?? `unknown:${row.key_id}`
    counts[key] = (counts[key] ?? 0) + Number(row.n)
  }
  return counts
}
