import { Transform, type Readable, type TransformCallback } from 'node:stream'

/**
 * Where uploaded bytes live. Objects are written once under a key and never rewritten: a new upload gets a new
 * key. Implementations: a local (or shared network) directory, and memory for ephemeral deployments and tests;
 * an object store plugs in behind the same interface.
 */
export interface FileStorage {
  /**
   * Stores the stream under the key. Either the whole content is stored, or nothing is: a stream that fails or
   * grows past `maxBytes` (rejected with `ContentTooLargeError`) leaves no object and no partial file behind.
   */
  put(key: string, content: Readable, limits: { maxBytes: number }): Promise<{ size: number }>
  /** The object's content, or null when there is none under the key. */
  get(key: string): Promise<{ content: Readable; size: number } | null>
  /** Removes the object; removing a missing object is not an error. */
  delete(key: string): Promise<void>
}

export class ContentTooLargeError extends Error {
  readonly limit: number
  constructor(limit: number) {
    super(`The content is larger than ${limit} bytes`)
    this.name = 'ContentTooLargeError'
    this.limit = limit
  }
}

/** Keys are slash-separated segments of letters, digits and dashes: never a path that could leave the store. */
const KEY = /^[0-9A-Za-z-]{1,64}(\/[0-9A-Za-z-]{1,64}){0,7}$/

export function checkKey(key: string): string {
  if (!KEY.test(key)) throw new Error(`Invalid storage key: ${key}`)
  return key
}

/** Passes bytes through, failing with ContentTooLargeError as soon as more than `maxBytes` went by. */
export class ByteLimit extends Transform {
  bytes = 0
  private readonly maxBytes: number

  constructor(maxBytes: number) {
    super()
    this.maxBytes = maxBytes
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.bytes += chunk.length
    if (this.bytes > this.maxBytes) return callback(new ContentTooLargeError(this.maxBytes))
    callback(null, chunk)
  }
}
