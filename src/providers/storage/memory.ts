import { Readable, Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { ByteLimit, checkKey, type FileStorage } from './file-storage.ts'

/** Keeps objects in this process's memory: for DATA_DIR=:memory: deployments, whose data ends with the process. */
export class MemoryFileStorage implements FileStorage {
  private readonly objects = new Map<string, Buffer>()

  async put(key: string, content: Readable, limits: { maxBytes: number }): Promise<{ size: number }> {
    checkKey(key)
    const chunks: Buffer[] = []
    const collect = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        chunks.push(chunk)
        callback()
      },
    })
    await pipeline(content, new ByteLimit(limits.maxBytes), collect)
    const data = Buffer.concat(chunks)
    this.objects.set(key, data)
    return { size: data.length }
  }

  async get(key: string): Promise<{ content: Readable; size: number } | null> {
    const data = this.objects.get(checkKey(key))
    return data === undefined ? null : { content: Readable.from([data]), size: data.length }
  }

  async delete(key: string): Promise<void> {
    this.objects.delete(checkKey(key))
  }
}
