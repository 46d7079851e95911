import type { FastifyReply, FastifyRequest } from 'fastify'
import Type from 'typebox'
import { formatEntityTag } from '../../http/conditional.ts'
import type { ScopesByParam, Subject } from '../../http/principal.ts'
import { described, errorResponses } from '../../http/schemas.ts'
import { principalOf, sendSerialized, type App } from '../../http/types.ts'
import { DomainError } from '../../lib/errors.ts'
import {
  ETAG_HEADER,
  GetMetadataHeaders,
  JsonPatchOperations,
  Metadata,
  MetadataParams,
  MetadataResponse,
  PutMetadataHeaders,
  WriteMetadataHeaders,
} from './metadata.schemas.ts'
import { METADATA_ENTITIES, type MetadataService } from './metadata.service.ts'

const JSON_PATCH = 'application/json-patch+json'
const SUBJECTS: Subject[] = ['user:business', 'user:individual']

/** `core.<entity>.metadata:<access>`, chosen by the `entity` path parameter. */
function scopes(access: 'read' | 'write'): ScopesByParam {
  return { param: 'entity', byValue: Object.fromEntries(METADATA_ENTITIES.map((entity) => [entity, [`core.${entity}.metadata:${access}`]])) }
}

/** Rejects a body of another media type than the operation takes (the parsers accept both JSON types). */
function requireMediaType(expected: string) {
  return async (request: FastifyRequest) => {
    const type = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase()
    if (type !== expected) throw new DomainError('content_type_unsupported', `The request content type is not supported; send ${expected}`)
  }
}

const withEtag = (reply: FastifyReply, etag: string) => reply.header('etag', formatEntityTag(etag))

export function metadataRoutes(metadata: MetadataService) {
  return async function routes(app: App): Promise<void> {
    app.addContentTypeParser(JSON_PATCH, { parseAs: 'string' }, app.getDefaultJsonParser('error', 'error'))
    const path = '/core/:entity/:entityId/metadata'
    const tags = ['Metadata']

    app.get(
      path,
      {
        schema: {
          operationId: 'core.get-metadata',
          summary: 'Get metadata',
          description: 'Returns the metadata of an entity with its entity tag; 304 when `If-None-Match` names the current revision.',
          tags,
          params: MetadataParams,
          headers: GetMetadataHeaders,
          response: {
            200: described(MetadataResponse, 'Metadata retrieved.', ETAG_HEADER),
            304: Type.Null({ description: 'Not modified: the current revision has the entity tag given in `If-None-Match`.', headers: ETAG_HEADER }),
            ...errorResponses(400, 401, 403, 404, 429),
          },
        },
        config: { auth: { scopes: scopes('read'), subjects: SUBJECTS } },
      },
      async (request, reply) => {
        const { entity, entityId } = request.params
        const result = await metadata.get(principalOf(request), entity, entityId, { ifNoneMatch: request.headers['if-none-match'] })
        if ('notModified' in result) return withEtag(reply, result.etag).status(304).send()
        // The stored text is the metadata serialized (JSON.stringify of what was accepted): sent as it is.
        return sendSerialized(withEtag(reply, result.etag), `{"metadata":${result.text}}`)
      },
    )

    app.put(
      path,
      {
        schema: {
          operationId: 'core.set-metadata',
          summary: 'Set metadata',
          description: 'Creates (201) or replaces (200) the whole metadata of an entity. `If-Match` and `If-None-Match: *` make it conditional.',
          tags,
          params: MetadataParams,
          headers: PutMetadataHeaders,
          body: Metadata,
          response: {
            200: described(MetadataResponse, 'Metadata replaced.', ETAG_HEADER),
            201: described(MetadataResponse, 'Metadata created.', ETAG_HEADER),
            ...errorResponses(400, 401, 403, 404, 412, 413, 415, 429),
          },
        },
        config: { auth: { scopes: scopes('write'), subjects: SUBJECTS } },
        preValidation: requireMediaType('application/json'),
      },
      async (request, reply) => {
        const { entity, entityId } = request.params
        const result = await metadata.put(principalOf(request), entity, entityId, request.body, {
          ifMatch: request.headers['if-match'],
          ifNoneMatch: request.headers['if-none-match'],
        })
        return withEtag(reply, result.etag).status(result.created ? 201 : 200).send({ metadata: result.metadata })
      },
    )

    app.patch(
      path,
      {
        schema: {
          operationId: 'core.update-metadata',
          summary: 'Update metadata',
          description: 'Applies a JSON Patch (RFC 6902, `application/json-patch+json`) to the metadata of an entity, atomically.',
          tags,
          consumes: [JSON_PATCH],
          params: MetadataParams,
          headers: WriteMetadataHeaders,
          body: JsonPatchOperations,
          response: {
            200: described(MetadataResponse, 'Metadata patched.', ETAG_HEADER),
            ...errorResponses(400, 401, 403, 404, 412, 413, 415, 422, 429),
          },
        },
        config: { auth: { scopes: scopes('write'), subjects: SUBJECTS } },
        preValidation: requireMediaType(JSON_PATCH),
      },
      async (request, reply) => {
        const { entity, entityId } = request.params
        const result = await metadata.patch(principalOf(request), entity, entityId, request.body, { ifMatch: request.headers['if-match'] })
        return withEtag(reply, result.etag).send({ metadata: result.metadata })
      },
    )

    app.delete(
      path,
      {
        schema: {
          operationId: 'core.delete-metadata',
          summary: 'Delete metadata',
          description: 'Removes all metadata of an entity.',
          tags,
          params: MetadataParams,
          headers: WriteMetadataHeaders,
          response: { 204: Type.Null({ description: 'Metadata deleted.' }), ...errorResponses(400, 401, 403, 404, 412, 429) },
        },
        config: { auth: { scopes: scopes('write'), subjects: SUBJECTS } },
      },
      async (request, reply) => {
        const { entity, entityId } = request.params
        await metadata.delete(principalOf(request), entity, entityId, { ifMatch: request.headers['if-match'] })
        return reply.status(204).send(null)
      },
    )
  }
}
