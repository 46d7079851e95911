import Type, { type TSchema } from 'typebox'

/**
 * Named schemas. A schema passed through `component()` keeps its place in the route schemas (so types
 * infer and the validator sees it inline) and is emitted once under `#/components/schemas/<name>` in
 * the OpenAPI document, referenced from every operation that uses it.
 */
const componentNames = new WeakMap<object, string>()
const componentsByName = new Map<string, TSchema>()

export function component<T extends TSchema>(name: string, schema: T): T {
  const existing = componentsByName.get(name)
  if (existing && existing !== schema) throw new Error(`Component schema ${name} is defined twice`)
  componentNames.set(schema, name)
  componentsByName.set(name, schema)
  return schema
}

export function componentName(schema: object): string | undefined {
  return componentNames.get(schema)
}

export function registeredComponents(): ReadonlyMap<string, TSchema> {
  return componentsByName
}

/** A response schema with its own description; a named schema stays a reference to its component. */
export function described<T extends TSchema>(schema: T, description: string, headers?: Record<string, object>): T {
  const copy = { ...schema, description, ...(headers ? { headers } : {}) } as T
  const name = componentNames.get(schema)
  if (name !== undefined) componentNames.set(copy, name)
  return copy
}

export const Uuid = component('uuid', Type.String({ format: 'uuid', description: 'A UUID.' }))

export const Timestamp = component('timestamp', Type.String({ format: 'date-time', description: 'An ISO 8601 timestamp in UTC with milliseconds.' }))

export const ErrorBody = component(
  'error',
  Type.Object(
    {
      code: Type.String({ description: 'Machine-readable error code; new codes may be added, so handle unknown ones.' }),
      message: Type.String({ description: 'Human-readable explanation.' }),
      details: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'Structured information about the error.' })),
    },
    { description: 'The error envelope every failing operation returns.' },
  ),
)

export const OAuthErrorBody = component(
  'oauth2-error',
  Type.Object(
    {
      error: Type.String({ description: 'RFC 6749 §5.2 error code.' }),
      error_description: Type.Optional(Type.String({ description: 'Human-readable explanation.' })),
      error_uri: Type.Optional(Type.String()),
    },
    { description: 'An OAuth 2.0 error (RFC 6749 §5.2).' },
  ),
)

const errorDescriptions: Record<number, string> = {
  400: 'The request has missing or invalid parameters (`request_invalid`, with `details.violations`).',
  401: 'The access token is missing, invalid, expired or revoked.',
  403: 'The token lacks a required scope, or the operation is not available to the subject.',
  404: 'The entity does not exist or belongs to another organization.',
  409: 'The request conflicts with the current state or a business rule.',
  410: 'The link was already used.',
  412: 'A conditional header does not match the current state.',
  413: 'The content is larger than allowed.',
  415: 'The request content type is not supported.',
  429: 'Too many requests; retry after the number of seconds in `Retry-After`.',
  500: 'An unexpected error; report the request id.',
  503: 'A provider the operation relies on is unavailable; retry after the number of seconds in `Retry-After`.',
}

/** Error responses of an operation, each with the error envelope. */
export function errorResponses<const S extends readonly number[]>(...statuses: S): { [K in S[number]]: typeof ErrorBody } {
  const responses: Record<number, TSchema> = {}
  for (const status of [...statuses, 500]) responses[status] = described(ErrorBody, errorDescriptions[status] ?? 'Error.')
  return responses as { [K in S[number]]: typeof ErrorBody }
}

/** Headers that tell who the end user behind a request is; kept with what they create. */
export const UserContextHeaders = {
  'x-service-user-ip': Type.Optional(
    Type.String({ anyOf: [{ format: 'ipv4' }, { format: 'ipv6' }], description: 'IP address of the end user making the request.' }),
  ),
  'x-service-user-agent': Type.Optional(Type.String({ pattern: '^\\S.*\\S$|^\\S$', maxLength: 1024, description: 'User agent of the end user.' })),
  'x-service-user-origin': Type.Optional(Type.String({ pattern: '^\\S.*\\S$|^\\S$', maxLength: 1024, description: 'Origin of the end user request.' })),
  'x-service-user-country': Type.Optional(Type.String({ pattern: '^[A-Z]{2}$', description: 'ISO 3166-1 alpha-2 country of the end user.' })),
  'x-service-user-subdivision': Type.Optional(
    Type.String({ pattern: '^[A-Z]{2}-[A-Z0-9]{1,3}$', description: 'ISO 3166-2 subdivision of the end user.' }),
  ),
  'x-service-user-city': Type.Optional(Type.String({ pattern: '^\\S.*\\S$|^\\S$', maxLength: 200, description: 'City of the end user.' })),
}

export const OnBehalfOfHeader = {
  'x-on-behalf-of': Type.Optional(
    Type.String({
      pattern: '^(user|client)\\s[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-8][0-9a-fA-F]{3}-[089abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$',
      description: 'The subject the operation acts for: `user <user id>` (requires `core.users:act-on-behalf-of`).',
    }),
  ),
}

/** Headers of an operation that may act for a user: X-On-Behalf-Of and the end user's context. */
export const ActingRequestHeaders = Type.Object({ ...OnBehalfOfHeader, ...UserContextHeaders })
