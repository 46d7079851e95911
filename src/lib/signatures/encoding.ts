import { base58, base64 } from '@scure/base'
import { hexToBytes } from '@noble/hashes/utils.js'

/** The codecs below throw on bad input; a verifier treats that as "not this encoding", so they return undefined. */

export function decodeBase64(text: string): Uint8Array | undefined {
  try {
    return base64.decode(text)
  } catch {
    return undefined
  }
}

export function decodeBase58(text: string): Uint8Array | undefined {
  try {
    return base58.decode(text)
  } catch {
    return undefined
  }
}

const HEX = /^(?:[0-9a-fA-F]{2})*$/

/** Hex in either case, with or without a `0x` prefix. */
export function decodeHex(text: string): Uint8Array | undefined {
  const digits = text.startsWith('0x') || text.startsWith('0X') ? text.slice(2) : text
  return HEX.test(digits) ? hexToBytes(digits) : undefined
}

/** Bitcoin's CompactSize length prefix. */
export function compactSize(length: number): Uint8Array {
  if (length < 0xfd) return Uint8Array.of(length)
  if (length <= 0xffff) return Uint8Array.of(0xfd, length & 0xff, length >>> 8)
  return Uint8Array.of(0xfe, length & 0xff, (length >>> 8) & 0xff, (length >>> 16) & 0xff, length >>> 24)
}

export function uint32LE(value: number): Uint8Array {
  const bytes = new Uint8Array(4)
  new DataView(bytes.buffer).setUint32(0, value >>> 0, true)
  return bytes
}

/** Reads Bitcoin's consensus serialization; every read returns undefined once the input runs short. */
export class ByteReader {
  readonly #bytes: Uint8Array
  #offset = 0

  constructor(bytes: Uint8Array) {
    this.#bytes = bytes
  }

  get done(): boolean {
    return this.#offset === this.#bytes.length
  }

  peek(ahead = 0): number | undefined {
    return this.#bytes[this.#offset + ahead]
  }

  bytes(length: number): Uint8Array | undefined {
    if (length > this.#bytes.length - this.#offset) return undefined
    const slice = this.#bytes.subarray(this.#offset, this.#offset + length)
    this.#offset += length
    return slice
  }

  uint32(): number | undefined {
    const bytes = this.bytes(4)
    return bytes && new DataView(bytes.buffer, bytes.byteOffset, 4).getUint32(0, true)
  }

  int32(): number | undefined {
    const bytes = this.bytes(4)
    return bytes && new DataView(bytes.buffer, bytes.byteOffset, 4).getInt32(0, true)
  }

  uint64(): bigint | undefined {
    const bytes = this.bytes(8)
    return bytes && new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0, true)
  }

  /** CompactSize; non-canonical (longer than needed) encodings are rejected, as consensus does. */
  compactSize(): number | undefined {
    const first = this.bytes(1)?.[0]
    if (first === undefined || first < 0xfd) return first
    if (first === 0xfd) {
      const bytes = this.bytes(2)
      const value = bytes && (bytes[0] ?? 0) | ((bytes[1] ?? 0) << 8)
      return value !== undefined && value >= 0xfd ? value : undefined
    }
    if (first === 0xfe) {
      const value = this.uint32()
      return value !== undefined && value > 0xffff ? value : undefined
    }
    // 0xff announces a 64-bit length: nothing that long fits in a capped signature.
    return undefined
  }

  varBytes(): Uint8Array | undefined {
    const length = this.compactSize()
    return length === undefined ? undefined : this.bytes(length)
  }
}
