import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest, RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerDefault } from 'fastify'
import type { Principal, RouteAuth } from './principal.ts'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Scopes and subjects the route requires; routes without it are public. */
    auth?: RouteAuth
    /** Errors of this route use the RFC 6749 shape `{error, error_description}`. */
    oauthErrors?: boolean
    /** The route is the webhook portal's: it takes the portal session's token (src/modules/webhooks), not an access token. */
    webhookPortal?: boolean
  }
  interface FastifyRequest {
    principal: Principal | null
  }
}

export type App = FastifyInstance<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, FastifyBaseLogger, TypeBoxTypeProvider>

/** The principal of an authenticated route; the auth hook guarantees it is set. */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new Error(`Route ${request.routeOptions.url ?? ''} has no auth configuration`)
  return request.principal
}

/**
 * Sends a body serialized once ahead of time (data fixed for the life of the process), as text or as its UTF-8
 * bytes (which are not encoded again per answer). The route's response schema still documents it, and the tests
 * still validate it, but it skips per-request serialization.
 */
export function sendSerialized(reply: FastifyReply, json: string | Buffer): FastifyReply {
  return reply.type('application/json; charset=utf-8').send(json)
}

/**
 * A route's hooks of one kind as a list, to add one in an `onRoute` hook: Fastify takes a single hook or a list, and
 * leaves the option undefined when there is none.
 */
export function hooksOf<T>(value: T | T[] | undefined): T[] {
  return value === undefined ? [] : Array.isArray(value) ? value : [value]
}
