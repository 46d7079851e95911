import type { FastifyReply, FastifyRequest, RouteHandlerMethod } from 'fastify'
import type { App } from '../../http/types.ts'
import { runAudited, type AuditEntry, type AuditObject } from './audit-scope.ts'

const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

function kebab(name: string): string {
  return name.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`)
}

/** Path parameters whose name does not say their object's type as the object's creation names it. */
const PARAMETER_TYPES: Record<string, string> = { endpointId: 'webhook-endpoint', messageId: 'webhook-message' }

/** The object type a path parameter names (`userId` → `user`), worked out once per name: the routes' are few. */
const parameterTypes = new Map<string, string>()
function parameterType(name: string): string {
  let type = parameterTypes.get(name)
  if (type === undefined) {
    type = PARAMETER_TYPES[name] ?? kebab(name.replace(/Id$/, ''))
    parameterTypes.set(name, type)
  }
  return type
}

/**
 * What a write is about, as its path says: the metadata routes' `{entity}/{entityId}` (`users/me`: the acting user),
 * else the path's last parameter (`userId` → a `user`), else the user the client acts for. Creations name their new
 * object themselves (`auditObject`).
 */
export function pathObject(paramNames: readonly string[], params: Record<string, unknown>, actingFor: string | null): AuditObject | null {
  const value = (name: string) => (typeof params[name] === 'string' ? (params[name] as string) : undefined)
  const entity = value('entity')
  const entityId = value('entityId')
  if (entity !== undefined && entityId !== undefined) {
    // `/core/users/me/metadata`: the acting user.
    if (entity === 'users' && entityId === 'me') return actingFor === null ? null : { type: 'user', id: actingFor }
    return { type: entity.replace(/s$/, ''), id: entityId }
  }
  const last = paramNames.at(-1)
  const id = last === undefined ? undefined : value(last)
  if (last !== undefined && id !== undefined) return { type: parameterType(last), id }
  return actingFor === null ? null : { type: 'user', id: actingFor }
}

/** What the route says of itself, taken once when it is registered (`request.routeOptions` builds a copy per read). */
interface RouteNames {
  operationId: string | undefined
  url: string
}

function entryOf(request: FastifyRequest, route: RouteNames): AuditEntry | null {
  const method = request.method
  const operation = route.operationId ?? `${method} ${route.url}`
  // Whole literals of one shape rather than spreads of a common part: this runs on every write request, and the
  // spread was its costliest line in profiles.
  const principal = request.principal
  if (principal) {
    const actor = principal.widget === undefined ? 'client' : 'widget-session'
    return { organizationId: principal.organizationId, actor, clientId: principal.clientId, userId: principal.userId, operation, method, route: route.url, requestId: request.id }
  }
  const portal = request.webhookPortal
  if (portal) return { organizationId: portal.organizationId, actor: 'webhook-portal', clientId: null, userId: null, operation, method, route: route.url, requestId: request.id }
  return null
}

/**
 * The audit trail's HTTP side: every write operation a client (or the webhook portal's session) calls runs with its
 * audit row waiting; the row is written by the request's first transaction that writes (see AuditTrailService).
 * Registered before the routes, as a route-level wrap: reads pay nothing.
 */
export function registerAuditTrail(app: App): void {
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method]
    if (!methods.some((method) => WRITES.has(method))) return
    if (!route.config?.auth && route.config?.webhookPortal !== true) return
    const paramNames = [...route.url.matchAll(/:(\w+)/g)].map((match) => match[1]!)
    const operationId = route.schema?.operationId
    const names: RouteNames = { operationId: operationId === undefined ? undefined : String(operationId), url: route.url }
    const handler = route.handler as (this: unknown, request: FastifyRequest, reply: FastifyReply) => unknown
    route.handler = async function audited(this: unknown, request: FastifyRequest, reply: FastifyReply) {
      const entry = WRITES.has(request.method) ? entryOf(request, names) : null
      if (!entry) return handler.call(this, request, reply)
      const object = pathObject(paramNames, (request.params ?? {}) as Record<string, unknown>, entry.userId)
      return runAudited(entry, object, async () => handler.call(this, request, reply))
    } as RouteHandlerMethod
  })
}
