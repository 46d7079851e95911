import Type from 'typebox'
import { REPLAYED_RESPONSE_HEADER } from '../../http/idempotency.ts'
import { ActingRequestHeaders, described, errorResponses } from '../../http/schemas.ts'
import { principalOf, sendSerialized, type App } from '../../http/types.ts'
import {
  CreateUserBody,
  CreateUserResponse,
  DeleteUserBody,
  GetUserResponse,
  UserRequestHeaders,
  type User,
} from './users.schemas.ts'
import type { UsersService } from './users.service.ts'
import { userContextOf } from '../../http/user-context.ts'


export function usersRoutes(users: UsersService) {
  return async function routes(app: App): Promise<void> {
    // `GET /core/users/me`'s body of each user object the service hands out: the same object (a cached row's view)
    // is the same body, serialized once by the route's own serializer.
    const bodies = new WeakMap<User, string>()
    app.post(
      '/core/users',
      {
        schema: {
          operationId: 'core.create-user',
          summary: 'Create user',
          description: 'Creates an individual or business user of the calling organization. Requires the end user\'s IP in `X-Service-User-Ip`.',
          tags: ['Users'],
          headers: UserRequestHeaders,
          body: CreateUserBody,
          response: {
            201: described(CreateUserResponse, 'User created (or, for an Idempotency-Key retry, the first response replayed).', REPLAYED_RESPONSE_HEADER),
            ...errorResponses(400, 401, 403, 409, 413, 415, 422, 429),
          },
        },
        config: { auth: { scopes: ['core.users:create'], subjects: ['client'] }, idempotent: true },
        // The reference defaults `type` to `individual`; apply it before the union is matched.
        preValidation: async (request) => {
          const body = request.body as Record<string, unknown> | null
          if (body !== null && typeof body === 'object' && !Array.isArray(body) && body.type === undefined) body.type = 'individual'
        },
      },
      async (request, reply) => {
        const result = await users.create(principalOf(request), request.body, userContextOf(request.headers))
        return reply.status(201).send(result)
      },
    )

    app.get(
      '/core/users/me',
      {
        schema: {
          operationId: 'core.get-user',
          summary: 'Get user',
          description: 'Returns the user the request acts for (`X-On-Behalf-Of: user <id>`).',
          tags: ['Users'],
          headers: ActingRequestHeaders,
          response: { 200: described(GetUserResponse, 'User retrieved.'), ...errorResponses(400, 401, 403, 404, 429) },
        },
        config: { auth: { scopes: ['core.users:read'], subjects: ['user:business', 'user:individual'] } },
      },
      async (request, reply) => {
        const user = await users.getMe(principalOf(request))
        let body = bodies.get(user)
        if (body === undefined) {
          // The route's serializer makes text (its Buffer and ArrayBuffer forms are for other payloads).
          body = String(reply.serialize({ user }))
          bodies.set(user, body)
        }
        return sendSerialized(reply, body)
      },
    )

    app.delete(
      '/core/users/me',
      {
        schema: {
          operationId: 'core.delete-user',
          summary: 'Delete user',
          description: 'Deletes the user the request acts for. Its email becomes available to new users.',
          tags: ['Users'],
          headers: ActingRequestHeaders,
          body: DeleteUserBody,
          response: { 204: Type.Null({ description: 'User deleted.' }), ...errorResponses(400, 401, 403, 404, 409, 413, 415, 429) },
        },
        config: { auth: { scopes: ['core.users:delete'], subjects: ['user:business', 'user:individual'] } },
      },
      async (request, reply) => {
        await users.deleteMe(principalOf(request), request.body, userContextOf(request.headers))
        return reply.status(204).send(null)
      },
    )
  }
}
