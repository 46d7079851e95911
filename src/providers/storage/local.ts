import { randomBytes } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import type { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { ByteLimit, checkKey, type FileStorage } from './file-storage.ts'

/**
 * Objects as files under a directory. Content is written to a temporary name, flushed, then renamed into place,
 * so a reader (in this process or another one sharing the directory) sees a whole object or none.
 */
export class LocalFileStorage implements FileStorage {
  private readonly root: string

  constructor(root: string) {
    this.root = path.resolve(root)
  }

  private pathOf(key: string): string {
    return path.join(this.root, ...checkKey(key).split('/'))
  }

  async put(key: string, content: Readable, limits: { maxBytes: number }): Promise<{ size: number }> {
    const target = this.pathOf(key)
    await fs.promises.mkdir(path.dirname(target), { recursive: true })
    const partial = `${target}.partial-${randomBytes(6).toString('hex')}`
    const limit = new ByteLimit(limits.maxBytes)
    try {
      await pipeline(content, limit, fs.createWriteStream(partial, { flags: 'wx', mode: 0o600, flush: true }))
      await fs.promises.rename(partial, target)
    } catch (error) {
      await fs.promises.rm(partial, { force: true })
      throw error
    }
    return { size: limit.bytes }
  }

  async get(key: string): Promise<{ content: Readable; size: number } | null> {
    const file = this.pathOf(key)
    try {
      const handle = await fs.promises.open(file, 'r')
      const { size } = await handle.stat()
      return { content: handle.createReadStream(), size }
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null
      throw error
    }
  }

  /** Removes the object, and what a write of it that was cut short (its process died) left behind. */
  async delete(key: string): Promise<void> {
    const target = this.pathOf(key)
    await fs.promises.rm(target, { force: true })
    const partial = `${path.basename(target)}.partial-`
    let siblings: string[]
    try {
      siblings = await fs.promises.readdir(path.dirname(target))
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return
      throw error
    }
    for (const name of siblings) if (name.startsWith(partial)) await fs.promises.rm(path.join(path.dirname(target), name), { force: true })
  }
}
