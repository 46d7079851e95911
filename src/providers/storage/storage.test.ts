import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Readable } from 'node:stream'
import { after, describe, test } from 'node:test'
import { ContentTooLargeError, type FileStorage } from './file-storage.ts'
import { LocalFileStorage } from './local.ts'
import { MemoryFileStorage } from './memory.ts'

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-storage-'))
after(() => fs.rmSync(root, { recursive: true, force: true }))

async function read(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const chunk of stream) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
}

function chunked(total: number, chunk = 1000): Readable {
  return Readable.from((function* () {
    for (let sent = 0; sent < total; sent += chunk) yield Buffer.alloc(Math.min(chunk, total - sent), 7)
  })())
}

const storages: [string, () => FileStorage][] = [
  ['memory', () => new MemoryFileStorage()],
  ['local', () => new LocalFileStorage(fs.mkdtempSync(path.join(root, 'store-')))],
]

for (const [name, make] of storages) {
  describe(`${name} file storage`, () => {
    test('stores, reads back and deletes an object', async () => {
      const storage = make()
      assert.deepEqual(await storage.put('org/file/a1', chunked(2500), { maxBytes: 2500 }), { size: 2500 })
      const stored = await storage.get('org/file/a1')
      assert.equal(stored?.size, 2500)
      assert.deepEqual(await read(stored!.content), Buffer.alloc(2500, 7))
      await storage.delete('org/file/a1')
      assert.equal(await storage.get('org/file/a1'), null)
      await storage.delete('org/file/a1')
    })

    test('content past the limit is refused and leaves nothing behind', async () => {
      const storage = make()
      await assert.rejects(storage.put('org/file/big', chunked(2501), { maxBytes: 2500 }), ContentTooLargeError)
      assert.equal(await storage.get('org/file/big'), null)
    })

    test('a failing stream leaves nothing behind', async () => {
      const storage = make()
      const failing = Readable.from((function* () {
        yield Buffer.alloc(100)
        throw new Error('connection reset')
      })())
      await assert.rejects(storage.put('org/file/cut', failing, { maxBytes: 1000 }), /connection reset/)
      assert.equal(await storage.get('org/file/cut'), null)
    })

    test('keys that could leave the store are refused', async () => {
      const storage = make()
      for (const key of ['../escape', 'a/../../b', '/absolute', 'a//b', '', 'a/b.c']) {
        await assert.rejects(storage.put(key, chunked(1), { maxBytes: 10 }), /Invalid storage key/, key)
      }
    })
  })
}

test('the local storage leaves no partial file when content is refused', async () => {
  const dir = fs.mkdtempSync(path.join(root, 'partial-'))
  const storage = new LocalFileStorage(dir)
  await assert.rejects(storage.put('org/file/x', chunked(5000), { maxBytes: 10 }), ContentTooLargeError)
  assert.deepEqual(fs.readdirSync(path.join(dir, 'org', 'file')), [])
})

test('deleting an object of the local storage removes what a write cut short left, and nothing of other objects', async () => {
  const dir = fs.mkdtempSync(path.join(root, 'cut-'))
  const storage = new LocalFileStorage(dir)
  await storage.put('org/file/kept', chunked(10), { maxBytes: 10 })
  // What a process killed mid-write leaves: the temporary file the write streamed into, never renamed.
  fs.writeFileSync(path.join(dir, 'org', 'file', 'gone.partial-0a1b2c3d4e5f'), Buffer.alloc(5))
  fs.writeFileSync(path.join(dir, 'org', 'file', 'kept.partial-0a1b2c3d4e5f'), Buffer.alloc(5))
  await storage.delete('org/file/gone')
  assert.deepEqual(fs.readdirSync(path.join(dir, 'org', 'file')).sort(), ['kept', 'kept.partial-0a1b2c3d4e5f'])
  await storage.delete('org/other/none')
})
