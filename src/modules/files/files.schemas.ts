import Type, { type Static } from 'typebox'
import { IdempotencyKeyHeader } from '../../http/idempotency.ts'
import { component, OnBehalfOfHeader, Timestamp, UserContextHeaders, Uuid } from '../../http/schemas.ts'
import { CreationErrors, InitialMetadata } from '../metadata/index.ts'

export const FILE_CATEGORIES = ['document', 'image', 'video'] as const
export type FileCategory = (typeof FILE_CATEGORIES)[number]

const MEDIA_TYPE = '^[a-z0-9][a-z0-9!#$&^_.+-]{0,62}/[a-z0-9][a-z0-9!#$&^_.+-]{0,62}$'

/** reference-data/files-settings.json: per category, what may be uploaded and for how long a form stays valid. */
export const CategorySettings = Type.Object(
  {
    allowedContentTypes: Type.Array(Type.String({ pattern: MEDIA_TYPE }), { minItems: 1, description: 'Media types a file of the category may have.' }),
    minFileSize: Type.Integer({ minimum: 1, description: 'Smallest accepted file, in bytes.' }),
    maxFileSize: Type.Integer({ minimum: 1, maximum: 5_368_709_120, description: 'Largest accepted file, in bytes.' }),
    expiresIn: Type.Integer({ minimum: 60, maximum: 604_800, description: 'Seconds an upload form stays valid after the file is created.' }),
  },
  { additionalProperties: false },
)
export type CategorySettings = Static<typeof CategorySettings>

export const FilesSettingsFile = Type.Object({
  settings: Type.Object(
    Object.fromEntries(FILE_CATEGORIES.map((category) => [category, CategorySettings])) as Record<FileCategory, typeof CategorySettings>,
    { additionalProperties: false },
  ),
})
export type FilesSettingsFile = Static<typeof FilesSettingsFile>

const Category = Type.Enum([...FILE_CATEGORIES], { description: 'What the file is: a document (e.g. a utility bill), an image (e.g. a photo of an identity document) or a video.' })

export const CreateFileBody = component(
  'create-file-request',
  Type.Object(
    {
      category: Category,
      contentType: Type.String({
        maxLength: 100,
        description: 'Media type of the file to upload; must be allowed for the category (`GET /core/files/settings`).',
      }),
      metadata: Type.Optional(InitialMetadata('file')),
    },
    {
      additionalProperties: false,
      examples: [{ category: 'image', contentType: 'image/png', metadata: { externalId: 'doc-123' } }],
    },
  ),
)
export type CreateFileBody = Static<typeof CreateFileBody>

const FileBase = {
  id: Uuid,
  status: Type.Enum(['pending', 'uploaded'], { description: '`pending` until the bytes are uploaded, then `uploaded`.' }),
  category: Type.String({ description: 'The category given at creation.' }),
  contentType: Type.String({ description: 'The media type given at creation.' }),
}

export const FileUpload = Type.Object(
  {
    url: Type.String({ format: 'uri', description: 'Where to send the upload: `POST` a `multipart/form-data` body with every `formData` field, then the `file` part.' }),
    formData: Type.Record(Type.String(), Type.String(), { description: 'Form fields to send as they are, before the `file` part. They carry the signature that authorizes the upload.' }),
    expiresAt: Timestamp,
  },
  { description: 'How to upload the file\'s content.' },
)

export const FileForUpload = component(
  'file-for-upload',
  Type.Object({ ...FileBase, upload: FileUpload }, { description: 'A new file, waiting for its content.' }),
)

export const FileDownload = Type.Object(
  {
    url: Type.String({ format: 'uri', description: 'Signed link that returns the file\'s content; no token needed until it expires.' }),
    expiresAt: Timestamp,
  },
  { description: 'How to download the file\'s content (uploaded files only).' },
)

export const File = component('file', Type.Object({ ...FileBase, download: Type.Optional(FileDownload) }))
export type File = Static<typeof File>
export type FileForUpload = Static<typeof FileForUpload>

export const CreateFileResponse = component(
  'create-file-response',
  Type.Object({
    file: FileForUpload,
    errors: CreationErrors,
  }),
)

export const GetFileResponse = component('get-file-response', Type.Object({ file: File }))

export const FileParams = Type.Object({ fileId: Type.String({ format: 'uuid', description: 'The id of the file.' }) })

export const FilesSettings = component(
  'files-settings',
  Type.Record(Type.String(), component('file-category-settings', CategorySettings), { description: 'Upload settings by file category.' }),
)

export const FilesSettingsResponse = component('get-files-settings-response', Type.Object({ settings: FilesSettings }))

export const FilesSettingsQuery = Type.Object({
  category: Type.Optional(
    Type.String({
      pattern: `^(${FILE_CATEGORIES.join('|')})(,(${FILE_CATEGORIES.join('|')}))*$`,
      description: 'Only these categories, comma-separated (e.g. `document,image`).',
    }),
  ),
})

export const CreateFileHeaders = Type.Object({ ...IdempotencyKeyHeader, ...OnBehalfOfHeader, ...UserContextHeaders })

/** The signed link parameter of the content download. */
export const DownloadQuery = Type.Object({
  token: Type.String({ minLength: 1, maxLength: 2048, description: 'The signature the download link carries.' }),
})

/**
 * The upload form, for the document only: the multipart body is read as a stream by the handler (the bytes are
 * never buffered), so this schema describes the fields without validating them.
 */
export const UploadForm = {
  description: 'The `formData` fields of the file\'s `upload`, each as a form field, then the content as the `file` part.',
  properties: {
    key: Type.String({ description: 'The file id.' }),
    policy: Type.String({ description: 'What the upload may contain and until when (signed).' }),
    signature: Type.String({ description: 'HMAC-SHA256 signature of the policy.' }),
    file: Type.String({ format: 'binary', description: 'The content; its part\'s Content-Type must be the file\'s `contentType`.' }),
  },
  required: ['key', 'policy', 'signature', 'file'],
}
