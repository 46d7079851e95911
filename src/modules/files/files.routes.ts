import multipart from '@fastify/multipart'
import Type from 'typebox'
import { REPLAYED_RESPONSE_HEADER } from '../../http/idempotency.ts'
import { ActingRequestHeaders, described, ErrorBody, errorResponses } from '../../http/schemas.ts'
import { principalOf, type App } from '../../http/types.ts'
import { contentTooLarge, DomainError } from '../../lib/errors.ts'
import {
  CreateFileBody,
  CreateFileHeaders,
  CreateFileResponse,
  DownloadQuery,
  FileParams,
  FilesSettingsQuery,
  FilesSettingsResponse,
  GetFileResponse,
  UploadForm,
  type FileCategory,
} from './files.schemas.ts'
import type { FilesService } from './files.service.ts'

const tags = ['Files']
/** Form fields are short (ids, a policy and its signature); anything larger is not a form this service issued. */
const FORM_LIMITS = { fields: 8, fieldSize: 8192, files: 1, parts: 9, headerPairs: 100 }

/** A form the parser could not read (truncated, malformed, too many parts) is the client's mistake, not ours. */
function malformedForm(error: unknown, largestFileSize: number): DomainError {
  if (error instanceof DomainError) return error
  const code = (error as { code?: unknown }).code
  if (code === 'FST_REQ_FILE_TOO_LARGE') return contentTooLarge('bytes', largestFileSize, `The file is larger than ${largestFileSize} bytes`)
  const reason = error instanceof Error ? error.message : 'unreadable'
  return new DomainError('request_invalid', `The multipart form cannot be read: ${reason}`, { details: { context: 'body', violations: [{ property: '', rule: 'multipart' }] } })
}

export function filesRoutes(files: FilesService) {
  return async function routes(app: App): Promise<void> {
    app.post(
      '/core/files',
      {
        schema: {
          operationId: 'core.create-file',
          summary: 'Create file',
          description:
            'Creates a `pending` file for the user the request acts for and returns a signed form to upload its content ' +
            '(`upload.url`, `upload.formData`), valid until `upload.expiresAt`.',
          tags,
          headers: CreateFileHeaders,
          body: CreateFileBody,
          response: {
            201: described(CreateFileResponse, 'File created (or, for an Idempotency-Key retry, the first response replayed).', REPLAYED_RESPONSE_HEADER),
            ...errorResponses(400, 401, 403, 404, 409, 413, 415, 422, 429),
          },
        },
        // The hosted KYC widget uploads the user's documents (docs/kyc-widget.md).
        config: { auth: { scopes: ['core.files:create'], subjects: ['user:business', 'user:individual'], widgetSessions: true }, idempotent: true },
      },
      async (request, reply) => reply.status(201).send(await files.create(principalOf(request), request.body)),
    )

    app.get(
      '/core/files/settings',
      {
        schema: {
          operationId: 'core.list-files-settings',
          summary: 'List files settings',
          description: 'What each file category accepts: content types, size limits, and how long an upload form stays valid.',
          tags,
          querystring: FilesSettingsQuery,
          headers: ActingRequestHeaders,
          response: { 200: described(FilesSettingsResponse, 'Settings by category.'), ...errorResponses(400, 401, 403, 404, 429) },
        },
        config: { auth: { scopes: ['core.files:read'], subjects: ['client', 'user:business', 'user:individual'] } },
      },
      async (request) => ({ settings: files.listSettings(request.query.category?.split(',') as FileCategory[] | undefined) }),
    )

    app.get(
      '/core/files/:fileId',
      {
        schema: {
          operationId: 'core.get-file',
          summary: 'Get file',
          description: 'Returns a file of the user the request acts for; once uploaded, with a signed link to download its content.',
          tags,
          params: FileParams,
          headers: ActingRequestHeaders,
          response: { 200: described(GetFileResponse, 'File retrieved.'), ...errorResponses(400, 401, 403, 404, 429) },
        },
        config: { auth: { scopes: ['core.files:read'], subjects: ['user:business', 'user:individual'] } },
      },
      async (request) => ({ file: await files.get(principalOf(request), request.params.fileId) }),
    )

    app.get(
      '/core/files/:fileId/content',
      {
        schema: {
          operationId: 'core.download-file-content',
          summary: 'Download file content',
          description:
            'The content of an uploaded file, with its content type. Reached through the signed `download.url` of ' +
            '`GET /core/files/{fileId}`: the link is the authorization, so it needs no token, and it expires.',
          tags,
          params: FileParams,
          querystring: DownloadQuery,
          response: {
            200: {
              description: 'The file content.',
              content: { '*/*': { schema: Type.String({ format: 'binary' }) } },
            },
            ...errorResponses(400, 403, 404, 429),
            403: described(ErrorBody, 'The link was altered (`signature_invalid`) or has expired (`signature_expired`).'),
          },
        },
      },
      async (request, reply) => {
        const { content, size, contentType } = await files.download(request.params.fileId, request.query.token)
        return reply
          .header('content-type', contentType)
          .header('content-length', String(size))
          // Uploaded content is not ours to render: the browser saves it, never runs it in this origin.
          .header('content-disposition', `attachment; filename="${request.params.fileId}"`)
          .header('x-content-type-options', 'nosniff')
          .header('content-security-policy', "default-src 'none'; sandbox")
          .header('cache-control', 'private, no-store')
          // The stream is the body; the response schema documents it as binary.
          .send(content as unknown as string)
      },
    )

    // Multipart parsing exists only in this scope: every other route keeps answering 415 to a form body.
    await app.register(async (uploads: App) => {
      await uploads.register(multipart, { limits: FORM_LIMITS })
      // Browsers post the form straight from the client's pages: any origin may read the answer. The signature
      // is the only authorization (no cookie, no token), so sharing the answer gives nothing away.
      uploads.addHook('onRequest', async (_request, reply) => {
        reply.header('access-control-allow-origin', '*')
      })
      uploads.post(
        '/core/files/:fileId/upload',
        {
          schema: {
            operationId: 'core.upload-file-content',
            summary: 'Upload file content',
            description:
              'Receives the content of a `pending` file through the signed form `POST /core/files` returned: a ' +
              '`multipart/form-data` body with every `upload.formData` field, then the content as the `file` part (last), ' +
              'whose Content-Type is the file\'s `contentType`. The signature is the authorization: no token is needed. ' +
              'A tampered or expired form is 403; content larger than the category allows is 413 and nothing is kept; ' +
              'a file already uploaded is 409.',
            tags,
            params: FileParams,
            consumes: ['multipart/form-data'],
            body: { content: { 'multipart/form-data': { schema: UploadForm } } },
            response: {
              204: Type.Null({ description: 'Content stored; the file is now `uploaded`.' }),
              ...errorResponses(400, 403, 404, 409, 413, 415, 429),
              403: described(ErrorBody, 'The form was altered or belongs to another file (`signature_invalid`), or has expired (`signature_expired`).'),
              409: described(ErrorBody, 'The file content was already uploaded (`file_already_uploaded`), or its content type is no longer allowed (`file_content_type_not_allowed`).'),
              503: described(ErrorBody, 'The upload took so long that it was taken for abandoned and its content discarded (`service_unavailable`); send it again.'),
            },
          },
        },
        async (request, reply) => {
          if (!request.isMultipart()) throw new DomainError('content_type_unsupported', 'The request content type is not supported; send multipart/form-data')
          const part = await request.file({ limits: { ...FORM_LIMITS, fileSize: files.largestFileSize + 1 } }).catch((error: unknown) => {
            throw malformedForm(error, files.largestFileSize)
          })
          const fields: Record<string, string | undefined> = {}
          const received = part?.fields ?? {}
          for (const name of ['key', 'policy', 'signature']) {
            const field = received[name]
            if (field && !Array.isArray(field) && field.type === 'field' && typeof field.value === 'string') fields[name] = field.value
          }
          try {
            await files.upload(request.params.fileId, {
              fields,
              file: part && part.fieldname === 'file' ? { contentType: part.mimetype, content: part.file } : null,
            })
          } catch (error) {
            // A content stream that failed means the body was cut short or malformed.
            throw part?.file.errored ? malformedForm(error, files.largestFileSize) : error
          } finally {
            // Content left unread (a refused form) is not wanted: stop receiving it.
            if (part && !part.file.readableEnded) part.file.destroy()
          }
          return reply.status(204).send(null)
        },
      )
    })
  }
}
