import Type from 'typebox'
import { component, ErrorBody, OnBehalfOfHeader, UserContextHeaders } from '../../http/schemas.ts'
import { METADATA_ENTITIES } from './metadata.service.ts'

export const Metadata = component(
  'metadata',
  Type.Object({}, {
    additionalProperties: true,
    minProperties: 1,
    description: 'Free-form JSON object, at most 1024 characters (Unicode code points) once serialized.',
    examples: [{ externalId: 'crm-123', tier: 'gold' }],
  }),
)

export const MetadataResponse = component('metadata-response', Type.Object({ metadata: Metadata }))

/** The `metadata` of a request that creates an entity (`user`, `account`, `file`): stored with it, never failing it. */
export function InitialMetadata(entity: string) {
  return Type.Unknown({
    description:
      `Free-form JSON object (at most 1024 characters once serialized) stored as the ${entity}'s metadata. ` +
      `Invalid metadata never fails the creation: it is reported in \`errors.metadata\` and the ${entity} is created without it.`,
  })
}

/** The `errors` of a creation response: what was wrong with the initial metadata, which was then left out. */
export const CreationErrors = Type.Optional(
  Type.Object({ metadata: Type.Optional(ErrorBody) }, { description: 'Problems with optional parts of the request that did not prevent the creation.' }),
)

export const JsonPatchOperations = component(
  'json-patch-operations',
  Type.Array(
    Type.Object(
      {
        // Checked by the patch engine, not here: a malformed operation is a 422 naming it (RFC 6902 §5).
        op: Type.Optional(Type.Unknown({ description: 'String: `add`, `remove`, `replace`, `move`, `copy` or `test`.' })),
        path: Type.Optional(Type.Unknown({ description: 'String: JSON Pointer (RFC 6901) to the target location.' })),
        from: Type.Optional(Type.Unknown({ description: 'String: JSON Pointer to the source location (`move`, `copy`).' })),
        value: Type.Optional(Type.Unknown({ description: 'The value to add, replace with or test for.' })),
      },
      { additionalProperties: true },
    ),
    {
      description:
        'An RFC 6902 JSON Patch document. Operations apply in order and atomically: when one fails, nothing changes ' +
        'and the answer is 422 `json_patch_failed` naming the operation. An empty patch changes nothing.',
      examples: [[{ op: 'add', path: '/status', value: 'active' }, { op: 'remove', path: '/region' }]],
    },
  ),
)

export const MetadataParams = Type.Object({
  entity: Type.Enum([...METADATA_ENTITIES], { description: 'The kind of entity.' }),
  entityId: Type.Union([Type.String({ format: 'uuid' }), Type.Literal('me')], { description: 'The entity id; `me` for the user the request acts for.' }),
})

const EntityTag = (description: string) => Type.Optional(Type.String({ maxLength: 2000, description }))

const ifMatch = EntityTag('Apply only if the current revision has this entity tag (quoted or not, `W/` allowed); otherwise 412.')

export const GetMetadataHeaders = Type.Object({
  'if-none-match': EntityTag('Answer 304 Not Modified when the current revision has this entity tag.'),
  ...OnBehalfOfHeader,
  ...UserContextHeaders,
})

export const PutMetadataHeaders = Type.Object({
  'if-match': ifMatch,
  'if-none-match': EntityTag('`*`: create only; 412 when metadata already exists.'),
  ...OnBehalfOfHeader,
  ...UserContextHeaders,
})

export const WriteMetadataHeaders = Type.Object({ 'if-match': ifMatch, ...OnBehalfOfHeader, ...UserContextHeaders })

export const ETAG_HEADER = {
  etag: { type: 'string', pattern: '^"[a-f0-9]{64}"$', description: 'Entity tag of the current revision.' },
}
