import assert from 'node:assert/strict'
import { randomBytes, randomUUID } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Writable } from 'node:stream'
import { after, describe, test } from 'node:test'
import { buildApp, loggerOptions } from '../src/app.ts'
import { loadOrCreateSecrets } from '../src/lib/data-dir.ts'
import { DomainError } from '../src/lib/errors.ts'
import { eventsAbout } from '../src/modules/events/outbox.ts'
import { derivePurposeKey } from '../src/lib/sealing.ts'
import { signDownload, signUploadPolicy } from '../src/modules/files/signed-links.ts'
import { basicAuth, bearer, ENGINES, individualUser, openTestDatabase, startPeer, testConfig, useApp, USER_IP, type TestResponse } from './helpers.ts'

const MIN = 16
const MAX = 4096
const SETTINGS = {
  settings: {
    document: { allowedContentTypes: ['application/pdf', 'image/png'], minFileSize: MIN, maxFileSize: MAX * 2, expiresIn: 600 },
    image: { allowedContentTypes: ['image/jpeg', 'image/png'], minFileSize: MIN, maxFileSize: MAX, expiresIn: 300 },
    video: { allowedContentTypes: ['video/mp4'], minFileSize: MIN, maxFileSize: MAX * 4, expiresIn: 900 },
  },
}

interface Upload {
  url: string
  formData: Record<string, string>
  expiresAt: string
}
interface CreatedFile {
  id: string
  status: string
  category: string
  contentType: string
  upload: Upload
}

/** A multipart/form-data body: the fields in order, then the file part when given. */
export function multipartForm(fields: Record<string, string>, file?: { data: Buffer; contentType?: string; field?: string }) {
  const boundary = `----form${randomBytes(8).toString('hex')}`
  const chunks: Buffer[] = []
  for (const [name, value] of Object.entries(fields)) {
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`))
  }
  if (file) {
    const type = file.contentType === undefined ? '' : `Content-Type: ${file.contentType}\r\n`
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${file.field ?? 'file'}"; filename="upload.bin"\r\n${type}\r\n`), file.data, Buffer.from('\r\n'))
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`))
  return { payload: Buffer.concat(chunks), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } }
}

const pathOf = (url: string) => {
  const parsed = new URL(url)
  return `${parsed.pathname}${parsed.search}`
}

function assertError(response: TestResponse, status: number, code: string) {
  assert.equal(response.status, status, response.body)
  assert.equal(response.json().code, code, response.body)
}

const png = (size: number) => Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47]), randomBytes(size - 4)])

for (const engine of ENGINES) {
  describe(`files [${engine}]`, () => {
    const settingsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-files-settings-'))
    fs.writeFileSync(path.join(settingsDir, 'files-settings.json'), JSON.stringify(SETTINGS))
    const storageDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-files-'))
    after(() => {
      fs.rmSync(settingsDir, { recursive: true, force: true })
      fs.rmSync(storageDir, { recursive: true, force: true })
    })
    const suite = useApp(engine, { REFERENCE_DATA_DIR: settingsDir, FILE_STORAGE_DIR: storageDir })

    const newUser = async () => (await suite.ctx.createUser(suite.token)).id
    const create = (userId: string, body: unknown, headers: Record<string, string> = {}, token = suite.token) =>
      suite.ctx.request({ method: 'POST', url: '/core/files', headers: { ...bearer(token, userId), ...headers }, payload: body as Record<string, unknown> })
    const createFile = async (userId: string, body: Record<string, unknown> = { category: 'image', contentType: 'image/png' }) => {
      const response = await create(userId, body)
      assert.equal(response.status, 201, response.body)
      return response.json<{ file: CreatedFile }>().file
    }
    const getFile = (userId: string, fileId: string, token = suite.token) =>
      suite.ctx.request({ method: 'GET', url: `/core/files/${fileId}`, headers: bearer(token, userId) })
    const upload = (url: string, fields: Record<string, string>, file?: { data: Buffer; contentType?: string; field?: string }) =>
      suite.ctx.request({ method: 'POST', url: pathOf(url), ...multipartForm(fields, file) })
    const uploadKey = () => derivePurposeKey(suite.ctx.secrets.sealingKey, 'files/upload-policy')
    const storedObjects = (fileId: string) => {
      const dir = path.join(storageDir, suite.ctx.client.organizationId, fileId)
      return fs.existsSync(dir) ? fs.readdirSync(dir) : []
    }
    const fileRow = (fileId: string) => suite.ctx.database.db.selectFrom('files').selectAll().where('id', '=', fileId).executeTakeFirst()

    async function assertStillPending(userId: string, fileId: string) {
      const response = await getFile(userId, fileId)
      assert.equal(response.json<{ file: { status: string } }>().file.status, 'pending')
      assert.deepEqual(storedObjects(fileId), [], 'nothing is stored')
      assert.equal((await eventsAbout(suite.ctx.database.db, suite.ctx.client.organizationId, { type: 'file', id: fileId })).length, 0)
    }

    test('settings: every category, or the ones asked for; an unknown category is 400', async () => {
      const all = await suite.ctx.request({ method: 'GET', url: '/core/files/settings', headers: bearer(suite.token) })
      assert.equal(all.status, 200)
      assert.deepEqual(all.json(), SETTINGS)
      const some = await suite.ctx.request({ method: 'GET', url: '/core/files/settings?category=image,video', headers: bearer(suite.token) })
      assert.deepEqual(some.json(), { settings: { image: SETTINGS.settings.image, video: SETTINGS.settings.video } })
      const bad = await suite.ctx.request({ method: 'GET', url: '/core/files/settings?category=audio', headers: bearer(suite.token) })
      assertError(bad, 400, 'request_invalid')
      assert.equal(bad.json<{ details: { context: string } }>().details.context, 'query')
    })

    test('creates a pending file of the acting user with a signed upload form that targets this service', async () => {
      const userId = await newUser()
      const before = Date.now()
      const file = await createFile(userId, { category: 'image', contentType: 'Image/PNG' })
      assert.equal(file.status, 'pending')
      assert.equal(file.category, 'image')
      assert.equal(file.contentType, 'image/png', 'media types are stored in lower case')
      assert.equal(file.upload.url, `http://tessera.test/core/files/${file.id}/upload`)
      assert.deepEqual(Object.keys(file.upload.formData).sort(), ['key', 'policy', 'signature'])
      assert.equal(file.upload.formData.key, file.id)
      const expiresIn = Date.parse(file.upload.expiresAt) - before
      assert.ok(expiresIn > 299_000 && expiresIn <= 301_000, `upload form valid for the category's expiresIn (${expiresIn} ms)`)
      const got = await getFile(userId, file.id)
      assert.equal(got.status, 200)
      assert.deepEqual(got.json(), { file: { id: file.id, status: 'pending', category: 'image', contentType: 'image/png' } })
      const row = await fileRow(file.id)
      assert.equal(row?.user_id, userId)
    })

    test('a content type the category does not allow is 409 file_content_type_not_allowed and creates nothing', async () => {
      const userId = await newUser()
      for (const body of [{ category: 'image', contentType: 'application/pdf' }, { category: 'video', contentType: 'image/png' }, { category: 'document', contentType: 'text/html' }]) {
        assertError(await create(userId, body), 409, 'file_content_type_not_allowed')
      }
      const rows = await suite.ctx.database.db.selectFrom('files').select('id').where('user_id', '=', userId).execute()
      assert.equal(rows.length, 0)
    })

    test('malformed bodies are 400 request_invalid with violations and create nothing', async () => {
      const userId = await newUser()
      const cases: [unknown, string, string][] = [
        [{ contentType: 'image/png' }, 'category', 'required'],
        [{ category: 'image' }, 'contentType', 'required'],
        [{ category: 'audio', contentType: 'audio/mpeg' }, 'category', 'enum'],
        [{ category: 'image', contentType: 42 }, 'contentType', 'type'],
        [{ category: 'image', contentType: `image/${'x'.repeat(100)}` }, 'contentType', 'maxLength'],
        [{ category: 'image', contentType: 'image/png', owner: 'someone' }, 'owner', 'additionalProperties'],
      ]
      for (const [body, property, rule] of cases) {
        const response = await create(userId, body)
        assertError(response, 400, 'request_invalid')
        const { violations } = response.json<{ details: { violations: { property: string; rule: string }[] } }>().details
        assert.ok(violations.some((v) => v.property === property && v.rule === rule), `${JSON.stringify(body)}: ${JSON.stringify(violations)}`)
      }
      const notJson = await suite.ctx.request({ method: 'POST', url: '/core/files', headers: { ...bearer(suite.token, userId), 'content-type': 'application/json' }, payload: '{"category":' })
      assertError(notJson, 400, 'request_invalid')
      const huge = await suite.ctx.request({
        method: 'POST',
        url: '/core/files',
        headers: { ...bearer(suite.token, userId), 'content-type': 'application/json' },
        payload: JSON.stringify({ category: 'image', contentType: 'image/png', metadata: { blob: 'x'.repeat(2_000_000) } }),
      })
      assertError(huge, 413, 'content_too_large')
      const rows = await suite.ctx.database.db.selectFrom('files').select('id').where('user_id', '=', userId).execute()
      assert.equal(rows.length, 0)
    })

    test('metadata given at creation is stored; invalid metadata is reported and the file is still created', async () => {
      const userId = await newUser()
      const withMetadata = await createFile(userId, { category: 'document', contentType: 'application/pdf', metadata: { externalId: 'doc-1' } })
      const metadata = await suite.ctx.request({ method: 'GET', url: `/core/files/${withMetadata.id}/metadata`, headers: bearer(suite.token, userId) })
      assert.equal(metadata.status, 200, metadata.body)
      assert.deepEqual(metadata.json(), { metadata: { externalId: 'doc-1' } })

      const response = await create(userId, { category: 'image', contentType: 'image/png', metadata: { note: 'x'.repeat(2000) } })
      assert.equal(response.status, 201, response.body)
      const body = response.json<{ file: CreatedFile; errors: { metadata: { code: string } } }>()
      assert.equal(body.errors.metadata.code, 'content_too_large')
      assert.equal((await getFile(userId, body.file.id)).status, 200)
      const none = await suite.ctx.request({ method: 'GET', url: `/core/files/${body.file.id}/metadata`, headers: bearer(suite.token, userId) })
      assertError(none, 404, 'entity_not_found')

      const notObject = await create(userId, { category: 'image', contentType: 'image/png', metadata: [1, 2] })
      assert.equal(notObject.status, 201)
      assert.ok(notObject.json<{ errors?: { metadata?: unknown } }>().errors?.metadata)
    })

    test('files metadata: PUT, PATCH, GET, DELETE for the owner; another user or organization gets 404 file', async () => {
      const userId = await newUser()
      const file = await createFile(userId)
      const url = `/core/files/${file.id}/metadata`
      const headers = bearer(suite.token, userId)
      assert.equal((await suite.ctx.request({ method: 'PUT', url, headers, payload: { kind: 'passport' } })).status, 201)
      const patched = await suite.ctx.request({
        method: 'PATCH',
        url,
        headers: { ...headers, 'content-type': 'application/json-patch+json' },
        payload: JSON.stringify([{ op: 'add', path: '/side', value: 'front' }]),
      })
      assert.equal(patched.status, 200, patched.body)
      assert.deepEqual((await suite.ctx.request({ method: 'GET', url, headers })).json(), { metadata: { kind: 'passport', side: 'front' } })

      const other = await newUser()
      for (const method of ['GET', 'PUT', 'DELETE'] as const) {
        const response = await suite.ctx.request({ method, url, headers: bearer(suite.token, other), ...(method === 'PUT' ? { payload: { stolen: true } } : {}) })
        assertError(response, 404, 'entity_not_found')
        assert.equal(response.json<{ details: { entity: string } }>().details.entity, 'file')
      }
      const otherToken = await suite.ctx.token(await suite.ctx.newClient())
      const foreignUser = (await suite.ctx.createUser(otherToken)).id
      const foreign = await suite.ctx.request({ method: 'PUT', url, headers: bearer(otherToken, foreignUser), payload: { stolen: true } })
      assertError(foreign, 404, 'entity_not_found')
      assert.deepEqual((await suite.ctx.request({ method: 'GET', url, headers })).json(), { metadata: { kind: 'passport', side: 'front' } })

      const readOnly = await suite.ctx.newClient('core.users:act-on-behalf-of core.files.metadata:read', suite.ctx.client.organizationId)
      const readToken = await suite.ctx.token(readOnly)
      assert.equal((await suite.ctx.request({ method: 'GET', url, headers: bearer(readToken, userId) })).status, 200)
      const write = await suite.ctx.request({ method: 'PUT', url, headers: bearer(readToken, userId), payload: { a: 1 } })
      assertError(write, 403, 'token_insufficient_scopes')
      assert.ok(write.body.includes('core.files.metadata:write'))

      assert.equal((await suite.ctx.request({ method: 'DELETE', url, headers })).status, 204)
      assertError(await suite.ctx.request({ method: 'GET', url: '/core/files/not-a-uuid/metadata', headers }), 404, 'entity_not_found')
    })

    test('an Idempotency-Key retry replays the first creation and creates one file', async () => {
      const userId = await newUser()
      const key = randomUUID()
      const body = { category: 'image', contentType: 'image/jpeg' }
      const first = await create(userId, body, { 'idempotency-key': key })
      const retry = await create(userId, body, { 'idempotency-key': key })
      assert.equal(first.status, 201)
      assert.equal(retry.status, 201)
      assert.equal(retry.body, first.body)
      assert.equal(retry.headers['idempotent-replayed'], 'true')
      const rows = await suite.ctx.database.db.selectFrom('files').select('id').where('user_id', '=', userId).execute()
      assert.equal(rows.length, 1)
      assertError(await create(userId, { category: 'image', contentType: 'image/png' }, { 'idempotency-key': key }), 422, 'idempotency_key_reused')
    })

    test('upload: the content is stored, the file becomes uploaded with one event, and downloads as sent', async () => {
      const userId = await newUser()
      const file = await createFile(userId)
      const content = png(2000)
      const response = await upload(file.upload.url, file.upload.formData, { data: content, contentType: 'image/png' })
      assert.equal(response.status, 204, response.body)
      assert.equal(response.body, '')
      assert.equal(response.headers['access-control-allow-origin'], '*', 'a browser may read the answer of its upload')

      const got = await getFile(userId, file.id)
      const { file: uploaded } = got.json<{ file: { status: string; download: { url: string; expiresAt: string } } }>()
      assert.equal(uploaded.status, 'uploaded')
      assert.match(uploaded.download.url, new RegExp(`^http://tessera\\.test/core/files/${file.id}/content\\?token=`))
      assert.ok(Date.parse(uploaded.download.expiresAt) > Date.now())

      const download = await suite.ctx.request({ method: 'GET', url: pathOf(uploaded.download.url) })
      assert.equal(download.status, 200)
      assert.equal(download.headers['content-type'], 'image/png')
      assert.equal(download.headers['content-length'], String(content.length))
      assert.equal(download.headers['x-content-type-options'], 'nosniff')
      const raw = await suite.ctx.app.inject({ method: 'GET', url: pathOf(uploaded.download.url) })
      assert.ok(raw.rawPayload.equals(content), 'the bytes come back unchanged')

      const events = await eventsAbout(suite.ctx.database.db, suite.ctx.client.organizationId, { type: 'file', id: file.id })
      assert.equal(events.length, 1)
      assert.equal(events[0]!.type, 'core.file.uploaded')
      assert.equal(events[0]!.user_id, userId)
      assert.deepEqual(events[0]!.data, { file: { id: file.id, status: 'uploaded', category: 'image', contentType: 'image/png', size: 2000 } })
      assert.equal(storedObjects(file.id).length, 1)
      const row = await fileRow(file.id)
      assert.equal(Number(row?.size), 2000)

      assertError(await upload(file.upload.url, file.upload.formData, { data: png(100), contentType: 'image/png' }), 409, 'file_already_uploaded')
      assert.equal(storedObjects(file.id).length, 1, 'the refused second upload left nothing')
      assert.ok((await suite.ctx.app.inject({ method: 'GET', url: pathOf(uploaded.download.url) })).rawPayload.equals(content))
    })

    test('a form that was altered, belongs to another file or is incomplete is refused and changes nothing', async () => {
      const userId = await newUser()
      const file = await createFile(userId)
      const other = await createFile(userId)
      const content = { data: png(100), contentType: 'image/png' }
      const { key, policy, signature } = file.upload.formData as { key: string; policy: string; signature: string }
      const flipped = (text: string) => `${text.slice(0, -1)}${text.endsWith('0') ? '1' : '0'}`

      const tampered = await upload(file.upload.url, { key, policy, signature: flipped(signature) }, content)
      assertError(tampered, 403, 'signature_invalid')
      assert.equal(tampered.headers['access-control-allow-origin'], '*')
      assertError(await upload(file.upload.url, { key, policy: flipped(policy), signature }, content), 403, 'signature_invalid')
      // A policy granting more (another content type, larger files) with the original signature.
      const widened = signUploadPolicy(randomBytes(32), { fileId: file.id, organizationId: suite.ctx.client.organizationId, contentType: 'image/png', minSize: 0, maxSize: 10 ** 9, expiresAt: new Date(Date.now() + 60_000) })
      assertError(await upload(file.upload.url, { key, policy: widened.policy, signature }, content), 403, 'signature_invalid')
      assertError(await upload(file.upload.url, { key, ...widened }, content), 403, 'signature_invalid')
      assertError(await upload(other.upload.url, file.upload.formData, content), 403, 'signature_invalid')
      assertError(await upload(file.upload.url, { ...file.upload.formData, key: other.id }, content), 403, 'signature_invalid')

      const missing = await upload(file.upload.url, { key, policy }, content)
      assertError(missing, 400, 'request_invalid')
      assert.deepEqual(missing.json<{ details: { violations: unknown[] } }>().details.violations, [{ property: 'signature', rule: 'required' }])
      assertError(await upload(file.upload.url, file.upload.formData), 400, 'request_invalid')
      assertError(await upload(file.upload.url, file.upload.formData, { ...content, field: 'document' }), 400, 'request_invalid')
      // Fields after the file part are not read: the form must end with the file, as documented.
      const late = await suite.ctx.request({ method: 'POST', url: pathOf(file.upload.url), ...multipartForm({}, content) })
      assertError(late, 400, 'request_invalid')
      const notForm = await suite.ctx.request({ method: 'POST', url: pathOf(file.upload.url), payload: file.upload.formData })
      assertError(notForm, 415, 'content_type_unsupported')
      const truncated = multipartForm(file.upload.formData, content)
      const cut = await suite.ctx.request({ method: 'POST', url: pathOf(file.upload.url), headers: truncated.headers, payload: truncated.payload.subarray(0, truncated.payload.length - 60) })
      assertError(cut, 400, 'request_invalid')
      await assertStillPending(userId, file.id)
      await assertStillPending(userId, other.id)
    })

    test('an expired upload form is 403 signature_expired', async () => {
      const userId = await newUser()
      const file = await createFile(userId)
      const expired = signUploadPolicy(uploadKey(), {
        fileId: file.id,
        organizationId: suite.ctx.client.organizationId,
        contentType: 'image/png',
        minSize: MIN,
        maxSize: MAX,
        expiresAt: new Date(Date.now() - 1000),
      })
      const response = await upload(file.upload.url, { key: file.id, ...expired }, { data: png(100), contentType: 'image/png' })
      assertError(response, 403, 'signature_expired')
      await assertStillPending(userId, file.id)
    })

    test('the content type must be the declared one; sizes must be within the category limits, else nothing is kept', async () => {
      const userId = await newUser()
      const file = await createFile(userId)
      assertError(await upload(file.upload.url, file.upload.formData, { data: png(100), contentType: 'image/jpeg' }), 415, 'content_type_unsupported')
      assertError(await upload(file.upload.url, file.upload.formData, { data: png(100) }), 415, 'content_type_unsupported')

      const oversize = await upload(file.upload.url, file.upload.formData, { data: png(MAX + 1), contentType: 'image/png' })
      assertError(oversize, 413, 'content_too_large')
      assert.deepEqual(oversize.json<{ details: unknown }>().details, { threshold: { unit: 'bytes', limit: String(MAX) } })
      const beyondEveryCategory = await upload(file.upload.url, file.upload.formData, { data: png(MAX * 4 + 10), contentType: 'image/png' })
      assertError(beyondEveryCategory, 413, 'content_too_large')
      const undersize = await upload(file.upload.url, file.upload.formData, { data: png(MIN - 1), contentType: 'image/png' })
      assertError(undersize, 400, 'request_invalid')
      await assertStillPending(userId, file.id)

      const exact = await upload(file.upload.url, file.upload.formData, { data: png(MAX), contentType: 'image/png' })
      assert.equal(exact.status, 204, exact.body)
    })

    test('uploads racing for one file: exactly one is stored', async () => {
      const userId = await newUser()
      const file = await createFile(userId)
      const results = await Promise.all(
        Array.from({ length: 5 }, () => upload(file.upload.url, file.upload.formData, { data: png(1000), contentType: 'image/png' })),
      )
      assert.deepEqual(results.map((r) => r.status).sort(), [204, 409, 409, 409, 409])
      assert.equal(storedObjects(file.id).length, 1)
      assert.equal((await eventsAbout(suite.ctx.database.db, suite.ctx.client.organizationId, { type: 'file', id: file.id })).length, 1)
    })

    test('download links: altered, expired or another file\'s are refused', async () => {
      const userId = await newUser()
      const file = await createFile(userId)
      assert.equal((await upload(file.upload.url, file.upload.formData, { data: png(500), contentType: 'image/png' })).status, 204)
      const link = new URL(getFileDownload((await getFile(userId, file.id)).json()))
      const token = link.searchParams.get('token')!
      const [payload, signature] = token.split('.') as [string, string]
      const at = (t: string, id = file.id) => suite.ctx.request({ method: 'GET', url: `/core/files/${id}/content?token=${encodeURIComponent(t)}` })

      assertError(await at(`${payload}.${'0'.repeat(64)}`), 403, 'signature_invalid')
      assertError(await at(`${payload}x.${signature}`), 403, 'signature_invalid')
      assertError(await at('garbage'), 403, 'signature_invalid')
      assertError(await at(token, randomUUID()), 403, 'signature_invalid')
      const missing = await suite.ctx.request({ method: 'GET', url: `/core/files/${file.id}/content` })
      assertError(missing, 400, 'request_invalid')
      const key = derivePurposeKey(suite.ctx.secrets.sealingKey, 'files/download-link')
      const expired = signDownload(key, { fileId: file.id, organizationId: suite.ctx.client.organizationId, expiresAt: new Date(Date.now() - 1) })
      assertError(await at(expired), 403, 'signature_expired')
      // The upload key does not sign downloads: one purpose, one key.
      const wrongPurpose = signDownload(uploadKey(), { fileId: file.id, organizationId: suite.ctx.client.organizationId, expiresAt: new Date(Date.now() + 60_000) })
      assertError(await at(wrongPurpose), 403, 'signature_invalid')
      const pending = await createFile(userId)
      const forPending = signDownload(key, { fileId: pending.id, organizationId: suite.ctx.client.organizationId, expiresAt: new Date(Date.now() + 60_000) })
      assertError(await at(forPending, pending.id), 404, 'entity_not_found')
    })

    test('unknown files, other users\' and other organizations\' are 404 file; a malformed id too', async () => {
      const userId = await newUser()
      const file = await createFile(userId)
      for (const response of [
        await getFile(userId, randomUUID()),
        await getFile(await newUser(), file.id),
      ]) {
        assertError(response, 404, 'entity_not_found')
        assert.equal(response.json<{ details: { entity: string } }>().details.entity, 'file')
      }
      const otherToken = await suite.ctx.token(await suite.ctx.newClient())
      const foreignUser = (await suite.ctx.createUser(otherToken)).id
      assertError(await getFile(foreignUser, file.id, otherToken), 404, 'entity_not_found')
      const malformed = await getFile(userId, 'not-a-uuid')
      assertError(malformed, 404, 'entity_not_found')
      assert.equal(malformed.json<{ details: { entity: string } }>().details.entity, 'file')
      // The signed form still works for its own file only; the foreign client's forms do not reach it.
      const foreignFile = (await create(foreignUser, { category: 'image', contentType: 'image/png' }, {}, otherToken)).json<{ file: CreatedFile }>().file
      assertError(await upload(file.upload.url, foreignFile.upload.formData, { data: png(100), contentType: 'image/png' }), 403, 'signature_invalid')
      await assertStillPending(userId, file.id)
    })

    test('requireUploadedFile: the user\'s uploaded file; 404 when unknown or foreign, 409 file_invalid while pending', async () => {
      const userId = await newUser()
      const organizationId = suite.ctx.client.organizationId
      const file = await createFile(userId, { category: 'document', contentType: 'application/pdf' })
      const files = suite.ctx.services.files
      await assert.rejects(files.requireUploadedFile(organizationId, userId, file.id), (error) => error instanceof DomainError && error.code === 'file_invalid')
      assert.equal((await upload(file.upload.url, file.upload.formData, { data: Buffer.from('%PDF-1.7 '.repeat(10)), contentType: 'application/pdf' })).status, 204)
      assert.deepEqual(await files.requireUploadedFile(organizationId, userId, file.id), { id: file.id, category: 'document', contentType: 'application/pdf' })
      const notFound = (error: unknown) => error instanceof DomainError && error.code === 'entity_not_found' && error.details?.entity === 'file'
      await assert.rejects(files.requireUploadedFile(organizationId, await newUser(), file.id), notFound)
      await assert.rejects(files.requireUploadedFile(randomUUID(), userId, file.id), notFound)
      await assert.rejects(files.requireUploadedFile(organizationId, userId, randomUUID()), notFound)
      await assert.rejects(files.requireUploadedFile(organizationId, userId, 'nonsense'), notFound)
    })

    test('multipart bodies are parsed by the upload endpoint only', async () => {
      const userId = await newUser()
      const form = multipartForm({ category: 'image', contentType: 'image/png' })
      const response = await suite.ctx.request({ method: 'POST', url: '/core/files', headers: { ...bearer(suite.token, userId), ...form.headers }, payload: form.payload })
      assertError(response, 415, 'content_type_unsupported')
      const users = await suite.ctx.request({ method: 'POST', url: '/core/users', headers: { ...bearer(suite.token), 'x-service-user-ip': USER_IP, ...form.headers }, payload: form.payload })
      assertError(users, 415, 'content_type_unsupported')
    })
  })

  if (engine === 'postgres') describe('files across processes [postgres]', () => {
    const storageDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-files-shared-'))
    after(() => fs.rmSync(storageDir, { recursive: true, force: true }))
    const suite = useApp(engine, { FILE_STORAGE_DIR: storageDir })

    test('content uploaded through one process downloads through another sharing the directory', async () => {
      const peer = await startPeer(suite.ctx)
      try {
        const userId = (await suite.ctx.createUser(suite.token)).id
        const file = (await suite.ctx.request({ method: 'POST', url: '/core/files', headers: bearer(suite.token, userId), payload: { category: 'image', contentType: 'image/png' } })).json<{ file: CreatedFile }>().file
        const content = png(3000)
        const uploaded = await peer.request({ method: 'POST', url: pathOf(file.upload.url), ...multipartForm(file.upload.formData, { data: content, contentType: 'image/png' }) })
        assert.equal(uploaded.status, 204, uploaded.body)
        const link = getFileDownload((await suite.ctx.request({ method: 'GET', url: `/core/files/${file.id}`, headers: bearer(suite.token, userId) })).json())
        const download = await peer.app.inject({ method: 'GET', url: pathOf(link) })
        assert.equal(download.statusCode, 200)
        assert.ok(download.rawPayload.equals(content))
        assertError(await suite.ctx.request({ method: 'POST', url: pathOf(file.upload.url), ...multipartForm(file.upload.formData, { data: content, contentType: 'image/png' }) }), 409, 'file_already_uploaded')
      } finally {
        await peer.close()
      }
    })
  })

  describe(`files per user limit [${engine}]`, () => {
    const suite = useApp(engine, { MAX_FILES_PER_USER: '3' })

    test('a user has at most MAX_FILES_PER_USER files, even when creations race; other users are not affected', async () => {
      const userId = (await suite.ctx.createUser(suite.token)).id
      const create = () => suite.ctx.request({ method: 'POST', url: '/core/files', headers: bearer(suite.token, userId), payload: { category: 'image', contentType: 'image/png' } })
      const results = await Promise.all(Array.from({ length: 6 }, create))
      assert.deepEqual(results.map((r) => r.status).sort(), [201, 201, 201, 409, 409, 409])
      const refused = results.find((r) => r.status === 409)!
      assertError(refused, 409, 'max_files_limit_exceeded')
      assert.deepEqual(refused.json<{ details: unknown }>().details, { limit: 3 })
      const rows = await suite.ctx.database.db.selectFrom('files').select('id').where('user_id', '=', userId).execute()
      assert.equal(rows.length, 3)
      const other = (await suite.ctx.createUser(suite.token)).id
      assert.equal((await suite.ctx.request({ method: 'POST', url: '/core/files', headers: bearer(suite.token, other), payload: { category: 'image', contentType: 'image/png' } })).status, 201)
    })
  })

  describe(`files with the shipped settings, in memory [${engine}]`, () => {
    const suite = useApp(engine)

    test('the shipped settings: images and PDF documents, 1 KiB to 10 MiB', async () => {
      const response = await suite.ctx.request({ method: 'GET', url: '/core/files/settings?category=document,image', headers: bearer(suite.token) })
      const { settings } = response.json<{ settings: Record<string, { allowedContentTypes: string[]; minFileSize: number; maxFileSize: number }> }>()
      assert.deepEqual(settings.image!.allowedContentTypes, ['image/jpeg', 'image/png'])
      assert.ok(settings.document!.allowedContentTypes.includes('application/pdf'))
      assert.equal(settings.image!.minFileSize, 1024)
      assert.equal(settings.image!.maxFileSize, 10 * 1024 * 1024)
    })

    test('upload and download through the in-memory storage', async () => {
      const userId = (await suite.ctx.createUser(suite.token)).id
      const created = await suite.ctx.request({ method: 'POST', url: '/core/files', headers: bearer(suite.token, userId), payload: { category: 'image', contentType: 'image/jpeg' } })
      const file = created.json<{ file: CreatedFile }>().file
      const content = randomBytes(5000)
      const uploaded = await suite.ctx.request({ method: 'POST', url: pathOf(file.upload.url), ...multipartForm(file.upload.formData, { data: content, contentType: 'image/jpeg' }) })
      assert.equal(uploaded.status, 204, uploaded.body)
      const link = getFileDownload((await suite.ctx.request({ method: 'GET', url: `/core/files/${file.id}`, headers: bearer(suite.token, userId) })).json())
      const download = await suite.ctx.app.inject({ method: 'GET', url: pathOf(link) })
      assert.equal(download.statusCode, 200)
      assert.equal(download.headers['content-type'], 'image/jpeg')
      assert.ok(download.rawPayload.equals(content))
    })
  })
}

for (const engine of ENGINES) {
  test(`logs never contain upload signatures or download links' tokens [${engine}]`, async () => {
    const lines: string[] = []
    const stream = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        lines.push(chunk.toString())
        callback()
      },
    })
    const config = testConfig({ LOG_LEVEL: 'info' })
    const { database, cleanup } = await openTestDatabase(engine, config)
    const { app, services } = await buildApp({ config, database, secrets: loadOrCreateSecrets(null, config), logger: { ...(loggerOptions('info') as object), stream }, onClose: cleanup })
    try {
      const client = await services.clients.create({ name: 'Logged client', scopes: '*' })
      const tokenResponse = await app.inject({ method: 'POST', url: '/core/oauth2/token', headers: { authorization: basicAuth(client), 'content-type': 'application/x-www-form-urlencoded' }, payload: 'grant_type=client_credentials' })
      const token = tokenResponse.json<{ access_token: string }>().access_token
      const user = (await app.inject({ method: 'POST', url: '/core/users', headers: { ...bearer(token), 'x-service-user-ip': USER_IP }, payload: individualUser() })).json<{ user: { id: string } }>().user
      const file = (await app.inject({ method: 'POST', url: '/core/files', headers: bearer(token, user.id), payload: { category: 'image', contentType: 'image/png' } })).json<{ file: CreatedFile }>().file
      assert.equal((await app.inject({ method: 'POST', url: pathOf(file.upload.url), ...multipartForm(file.upload.formData, { data: png(2048), contentType: 'image/png' }) })).statusCode, 204)
      const link = getFileDownload((await app.inject({ method: 'GET', url: `/core/files/${file.id}`, headers: bearer(token, user.id) })).json())
      assert.equal((await app.inject({ method: 'GET', url: pathOf(link) })).statusCode, 200)
      const downloadToken = new URL(link).searchParams.get('token')!
      const all = lines.join('')
      assert.ok(all.includes(`/core/files/${file.id}/content?token=[redacted]`), 'the download is logged, without its token')
      for (const secret of [downloadToken, downloadToken.split('.')[1]!, file.upload.formData.signature!, file.upload.formData.policy!]) {
        assert.ok(!all.includes(secret), 'a signature leaked into the logs')
      }
    } finally {
      await app.close()
    }
  })
}

function getFileDownload(body: Record<string, unknown>): string {
  const file = body.file as { download?: { url: string } }
  assert.ok(file.download, 'an uploaded file has a download link')
  return file.download.url
}
