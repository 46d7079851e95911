import { randomBytes } from 'node:crypto'
import { Readable } from 'node:stream'
import type { Db, FileRow } from '../../db/schema.ts'
import type { Principal } from '../../http/principal.ts'
import type { Schedules } from '../../jobs/schedules.ts'
import { conflict, contentTooLarge, DomainError, notFound, requestInvalid, type ErrorBody } from '../../lib/errors.ts'
import { isUuid, uuidv7 } from '../../lib/ids.ts'
import { ContentTooLargeError, type FileStorage } from '../../providers/storage/file-storage.ts'
import { auditObject } from '../audit/index.ts'
import { recordEvent } from '../events/index.ts'
import { attachInitialMetadata } from '../metadata/index.ts'
import * as repository from './files.repository.ts'
import type { CategorySettings, CreateFileBody, File, FileCategory, FileForUpload, FilesSettingsFile } from './files.schemas.ts'
import { derivePurposeKey } from '../../lib/sealing.ts'
import { signDownload, signUploadPolicy, verifyDownload, verifyUploadPolicy, type Verified } from './signed-links.ts'

/** How long a download link stays valid. */
export const DOWNLOAD_LINK_TTL_SECONDS = 900
export const FILE_UPLOADED_EVENT = 'core.file.uploaded'
export const ORPHAN_BYTES_SCHEDULE = 'files.orphan-bytes'
/** Abandoned uploads one transaction of the clean-up removes. */
const ABANDONED_UPLOADS_BATCH = 100

export interface FilesServiceDeps {
  db: Db
  storage: FileStorage
  settings: FilesSettingsFile['settings']
  /** Base URL of this deployment: upload forms and download links point at it. */
  publicUrl: string
  sealingKey: string
  /** How many files one user may have. */
  maxFilesPerUser: number
}

/** What the upload endpoint received: the form fields sent before the file, and the file part. */
export interface UploadForm {
  fields: Record<string, string | undefined>
  file: { contentType: string; content: Readable } | null
}

/** Media types compare without case and without parameters (`image/PNG; q=1` is `image/png`). */
export function normalizeContentType(value: string): string {
  return value.split(';')[0]!.trim().toLowerCase()
}

function signatureProblem(verified: Exclude<Verified<unknown>, { ok: unknown }>, what: 'upload form' | 'download link'): DomainError {
  if (verified.problem === 'expired') {
    return new DomainError('signature_expired', `The ${what} expired at ${verified.expiresAt!.toISOString()}; request a new one`, {
      details: { expiredAt: verified.expiresAt!.toISOString() },
    })
  }
  return new DomainError('signature_invalid', `The ${what} signature is invalid: it was altered or not issued by this service`)
}

/** An upload that outlived the grace period of abandoned uploads: its bytes were deleted, it may be sent again. */
function uploadAbandoned(): DomainError {
  return new DomainError('service_unavailable', 'The upload took too long and its content was discarded; send it again', { retryable: true, retryAfterSeconds: 1 })
}

function contentTypeNotAllowed(): DomainError {
  return conflict('file_content_type_not_allowed', 'The file content type is not allowed for the specified category')
}

/**
 * Files users upload (identity documents, proofs of address, …): created `pending` with a signed upload form,
 * `uploaded` once the content arrives through that form, then readable through signed, expiring links.
 */
export class FilesService {
  private readonly db: Db
  private readonly storage: FileStorage
  private readonly settings: FilesSettingsFile['settings']
  private readonly publicUrl: string
  private readonly uploadKey: Buffer
  private readonly downloadKey: Buffer
  private readonly maxFilesPerUser: number
  /** The largest file any category accepts: the multipart parser's hard limit. */
  readonly largestFileSize: number

  constructor(deps: FilesServiceDeps) {
    this.db = deps.db
    this.storage = deps.storage
    this.settings = deps.settings
    this.publicUrl = deps.publicUrl
    this.uploadKey = derivePurposeKey(deps.sealingKey, 'files/upload-policy')
    this.downloadKey = derivePurposeKey(deps.sealingKey, 'files/download-link')
    this.maxFilesPerUser = deps.maxFilesPerUser
    this.largestFileSize = Math.max(...Object.values(deps.settings).map((s) => s.maxFileSize))
  }

  listSettings(categories?: readonly FileCategory[]): Record<string, CategorySettings> {
    const wanted = categories ?? (Object.keys(this.settings) as FileCategory[])
    return Object.fromEntries(wanted.map((category) => [category, this.settings[category]]))
  }

  private settingsOf(category: string): CategorySettings | undefined {
    return Object.hasOwn(this.settings, category) ? this.settings[category as FileCategory] : undefined
  }

  async create(principal: Principal, input: CreateFileBody): Promise<{ file: FileForUpload; errors?: { metadata: ErrorBody } }> {
    const userId = principal.userId
    if (userId === null) throw notFound('user')
    const settings = this.settings[input.category]
    const contentType = normalizeContentType(input.contentType)
    if (!settings.allowedContentTypes.includes(contentType)) throw contentTypeNotAllowed()

    const now = new Date()
    const id = uuidv7(now.getTime())
    auditObject('file', id)
    const row = {
      organization_id: principal.organizationId,
      id,
      user_id: userId,
      category: input.category,
      content_type: contentType,
      status: 'pending' as const,
      created_at: now,
      updated_at: now,
    }
    const metadataError = await this.db.transaction().execute(async (tx) => {
      await repository.lockUserFiles(tx, principal.organizationId, userId)
      if ((await repository.countUserFiles(tx, principal.organizationId, userId)) >= this.maxFilesPerUser) {
        throw conflict('max_files_limit_exceeded', 'The maximum number of allowed files has been exceeded', { limit: this.maxFilesPerUser })
      }
      await repository.insertFile(tx, row)
      return input.metadata !== undefined
        ? attachInitialMetadata(tx, { organizationId: principal.organizationId, entityType: 'files', entityId: row.id }, input.metadata, now)
        : null
    })

    const expiresAt = new Date(now.getTime() + settings.expiresIn * 1000)
    const signed = signUploadPolicy(this.uploadKey, {
      fileId: row.id,
      organizationId: principal.organizationId,
      contentType,
      minSize: settings.minFileSize,
      maxSize: settings.maxFileSize,
      expiresAt,
    })
    const file: FileForUpload = {
      id: row.id,
      status: 'pending',
      category: row.category,
      contentType,
      upload: {
        url: `${this.publicUrl}/core/files/${row.id}/upload`,
        formData: { key: row.id, policy: signed.policy, signature: signed.signature },
        expiresAt: expiresAt.toISOString(),
      },
    }
    return metadataError ? { file, errors: { metadata: metadataError.toBody() } } : { file }
  }

  private present(row: FileRow, now: Date): File {
    const file: File = { id: row.id, status: row.status, category: row.category, contentType: row.content_type }
    if (row.status !== 'uploaded') return file
    const expiresAt = new Date(now.getTime() + DOWNLOAD_LINK_TTL_SECONDS * 1000)
    const token = signDownload(this.downloadKey, { fileId: row.id, organizationId: row.organization_id, expiresAt })
    return { ...file, download: { url: `${this.publicUrl}/core/files/${row.id}/content?token=${token}`, expiresAt: expiresAt.toISOString() } }
  }

  /**
   * `details`: what the 404 says besides the entity. A path's `{fileId}` needs nothing more (a malformed one is
   * answered alike, src/http/path-ids.ts); a file another module references names its id.
   */
  private async findOwn(organizationId: string, userId: string | null, fileId: string, details: Record<string, unknown> = {}): Promise<FileRow> {
    const row = userId === null || !isUuid(fileId) ? undefined : await repository.findUserFile(this.db, organizationId, userId, fileId.toLowerCase())
    if (!row) throw notFound('file', details)
    return row
  }

  async get(principal: Principal, fileId: string): Promise<File> {
    return this.present(await this.findOwn(principal.organizationId, principal.userId, fileId), new Date())
  }

  /**
   * Receives a file's content through its signed upload form. Everything the form promises is checked before a
   * byte is stored; the content is streamed to storage within the size limits, and the file becomes `uploaded`
   * in the transaction that records the event.
   */
  async upload(fileId: string, form: UploadForm): Promise<void> {
    const missing = (['key', 'policy', 'signature'] as const).filter((name) => !form.fields[name])
    if (missing.length > 0) throw requestInvalid('body', missing.map((property) => ({ property, rule: 'required' })))
    const verified = verifyUploadPolicy(this.uploadKey, form.fields.policy!, form.fields.signature!, new Date())
    if (!('ok' in verified)) throw signatureProblem(verified, 'upload form')
    const policy = verified.ok
    if (form.fields.key !== policy.fileId || fileId.toLowerCase() !== policy.fileId) {
      throw new DomainError('signature_invalid', 'The upload form belongs to another file')
    }

    const row = await repository.findFile(this.db, policy.organizationId, policy.fileId)
    if (!row) throw notFound('file')
    if (row.status !== 'pending') throw conflict('file_already_uploaded', 'The file content was already uploaded; create a new file to upload another one')
    if (form.file === null) throw requestInvalid('body', [{ property: 'file', rule: 'required' }])
    const sent = normalizeContentType(form.file.contentType)
    if (sent !== policy.contentType) {
      throw new DomainError('content_type_unsupported', `The file part's content type must be ${policy.contentType}, as declared when the file was created (got ${sent || 'none'})`)
    }
    if (!this.settingsOf(row.category)?.allowedContentTypes.includes(sent)) throw contentTypeNotAllowed()

    // A fresh key per attempt: a racing second upload can never overwrite the content of the one that won. The
    // upload is noted before its first byte is stored, so that bytes a dying process leaves behind are found and
    // deleted (`removeAbandonedUploads`); it is forgotten once its bytes belong to the file, or are removed.
    const storageKey = `${row.organization_id}/${row.id}/${randomBytes(8).toString('hex')}`
    await repository.beginUpload(this.db, { storageKey, organizationId: row.organization_id, fileId: row.id, at: new Date() })
    let size: number
    try {
      size = (await this.storage.put(storageKey, form.file.content, { maxBytes: policy.maxSize })).size
    } catch (error) {
      // A failed write stores nothing; an upload already forgotten took so long that the clean-up gave it up.
      if (!(await repository.endUpload(this.db, storageKey))) throw uploadAbandoned()
      if (error instanceof ContentTooLargeError) throw contentTooLarge('bytes', policy.maxSize, `The file is larger than ${policy.maxSize} bytes`)
      throw error
    }

    const at = new Date()
    await this.db.transaction().execute(async (tx) => {
      if (!(await repository.endUpload(tx, storageKey))) throw uploadAbandoned()
      if (size < policy.minSize) {
        throw new DomainError('request_invalid', `The file is smaller than ${policy.minSize} bytes`, {
          details: { context: 'body', violations: [{ property: 'file', rule: 'minLength', ruleParams: { limit: policy.minSize, unit: 'bytes' } }] },
        })
      }
      const updated = await repository.markUploaded(tx, row.organization_id, row.id, { storageKey, size, at })
      if (!updated) throw conflict('file_already_uploaded', 'The file content was already uploaded; create a new file to upload another one')
      await recordEvent(tx, {
        organizationId: row.organization_id,
        type: FILE_UPLOADED_EVENT,
        subject: { type: 'file', id: row.id },
        userId: row.user_id,
        data: { file: { id: row.id, status: 'uploaded', category: row.category, contentType: row.content_type, size } },
        occurredAt: at,
      })
    }).catch(async (error: unknown) => {
      // Rolled back, the upload is still noted: its bytes are removed, then it is forgotten. Should either fail, the
      // clean-up removes them later.
      await this.storage.delete(storageKey)
      await repository.endUpload(this.db, storageKey)
      throw error
    })
  }

  /**
   * Deletes the bytes of uploads begun before `before` that never ended: their process died between storing bytes
   * and committing them to the file (or removing them). An upload committing right now is skipped (its row is
   * locked), and one still streaming when its row is taken here fails rather than commit bytes that are gone.
   * Answers how many were removed.
   */
  async removeAbandonedUploads(before: Date): Promise<number> {
    let removed = 0
    for (;;) {
      const count = await this.db.transaction().execute(async (tx) => {
        const rows = await repository.lockAbandonedUploads(tx, before, ABANDONED_UPLOADS_BATCH)
        for (const upload of rows) {
          await this.storage.delete(upload.storage_key)
          await repository.endUpload(tx, upload.storage_key)
        }
        return rows.length
      })
      removed += count
      if (count < ABANDONED_UPLOADS_BATCH) return removed
    }
  }

  /**
   * Registers `files.orphan-bytes`: every 10 minutes, the bytes of uploads abandoned for longer than `graceMs`
   * (FILE_ORPHAN_GRACE, longer than any upload takes) are deleted.
   */
  registerSchedules(schedules: Schedules, settings: { graceMs: number }): void {
    schedules.register({
      name: ORPHAN_BYTES_SCHEDULE,
      periodMs: 10 * 60_000,
      run: async ({ periodStart }) => void (await this.removeAbandonedUploads(new Date(periodStart.getTime() - settings.graceMs))),
    })
  }

  /** The content a signed download link names. */
  async download(fileId: string, token: string): Promise<{ content: Readable; size: number; contentType: string }> {
    const verified = verifyDownload(this.downloadKey, token, new Date())
    if (!('ok' in verified)) throw signatureProblem(verified, 'download link')
    const grant = verified.ok
    if (fileId.toLowerCase() !== grant.fileId) throw new DomainError('signature_invalid', 'The download link belongs to another file')
    const row = await repository.findFile(this.db, grant.organizationId, grant.fileId)
    const stored = row?.storage_key ? await this.storage.get(row.storage_key) : null
    if (!row || !stored) throw notFound('file')
    return { content: stored.content, size: stored.size, contentType: row.content_type }
  }

  /**
   * For modules that reference uploaded files (KYC identity and proof of address): the user's file, once its
   * content is uploaded. 404 `entity_not_found` when unknown or not the user's, 409 `file_invalid` when pending.
   */
  async requireUploadedFile(organizationId: string, userId: string, fileId: string): Promise<{ id: string; category: string; contentType: string }> {
    const row = await this.findOwn(organizationId, userId, fileId, { fileId })
    if (row.status !== 'uploaded') throw conflict('file_invalid', 'The file has not been uploaded', { fileId: row.id })
    return { id: row.id, category: row.category, contentType: row.content_type }
  }

  /** The file `/core/files/{entityId}/metadata` names: only a file of the acting user. */
  async metadataOwner(principal: Principal, entityId: string): Promise<string | null> {
    if (principal.userId === null) return null
    const row = await repository.findUserFile(this.db, principal.organizationId, principal.userId, entityId)
    return row?.id ?? null
  }

  /**
   * Keeps a file the server fetched for a user (evidence imported from an identity-verification provider) as an
   * `uploaded` file of theirs, under the category's rules (content type, sizes, the user's file limit). Given the id
   * of a file already kept, it answers that file untouched, so that an import run twice keeps one copy.
   */
  async keep(organizationId: string, userId: string, input: { id: string; category: FileCategory; contentType: string; content: Buffer }): Promise<{ id: string; size: number }> {
    const existing = await repository.findUserFile(this.db, organizationId, userId, input.id)
    if (existing?.status === 'uploaded') return { id: existing.id, size: Number(existing.size) }
    const settings = this.settings[input.category]
    const contentType = normalizeContentType(input.contentType)
    if (!settings.allowedContentTypes.includes(contentType)) throw contentTypeNotAllowed()
    if (input.content.length > settings.maxFileSize) throw contentTooLarge('bytes', settings.maxFileSize, `The file is larger than ${settings.maxFileSize} bytes`)
    if (input.content.length < settings.minFileSize) throw requestInvalid('body', [{ property: 'file', rule: 'minLength', ruleParams: { limit: settings.minFileSize, unit: 'bytes' } }])
    const storageKey = `${organizationId}/${input.id}/${randomBytes(8).toString('hex')}`
    const { size } = await this.storage.put(storageKey, Readable.from([input.content]), { maxBytes: settings.maxFileSize })
    const at = new Date()
    try {
      await this.db.transaction().execute(async (tx) => {
        await repository.lockUserFiles(tx, organizationId, userId)
        if (!existing) {
          if ((await repository.countUserFiles(tx, organizationId, userId)) >= this.maxFilesPerUser) {
            throw conflict('max_files_limit_exceeded', 'The maximum number of allowed files has been exceeded', { limit: this.maxFilesPerUser })
          }
          await repository.insertFile(tx, { organization_id: organizationId, id: input.id, user_id: userId, category: input.category, content_type: contentType, status: 'pending', created_at: at, updated_at: at })
        }
        if (!(await repository.markUploaded(tx, organizationId, input.id, { storageKey, size, at }))) throw conflict('file_already_uploaded', 'The file content was already uploaded')
        await recordEvent(tx, {
          organizationId,
          type: FILE_UPLOADED_EVENT,
          subject: { type: 'file', id: input.id },
          userId,
          data: { file: { id: input.id, status: 'uploaded', category: input.category, contentType, size } },
          occurredAt: at,
        })
      })
    } catch (error) {
      await this.storage.delete(storageKey)
      throw error
    }
    return { id: input.id, size }
  }
}
