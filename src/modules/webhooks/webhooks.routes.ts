import Type from 'typebox'
import type { FastifyRequest } from 'fastify'
import { described, errorResponses, UserContextHeaders } from '../../http/schemas.ts'
import { principalOf, type App } from '../../http/types.ts'
import type { PortalGrant } from './portal-tokens.ts'
import {
  AttemptsQuery,
  AttemptsResponse,
  CreateEndpointBody,
  EndpointParams,
  EndpointResponse,
  EndpointsResponse,
  EventParams,
  EventTypesResponse,
  ListQuery,
  ManagementLinkResponse,
  MessageParams,
  MessageResponse,
  MessagesResponse,
  OpenPortalBody,
  PortalSessionResponse,
  ReplayBody,
  ReplayResponse,
  RotateSecretBody,
  SecretResponse,
  TestEventBody,
  UpdateEndpointBody,
} from './webhooks.schemas.ts'
import type { WebhooksService } from './webhooks.service.ts'

/** `POST /core/webhooks/management-link`: the client's way into the portal. */
export function webhooksRoutes(webhooks: WebhooksService) {
  return async function routes(app: App): Promise<void> {
    app.post(
      '/core/webhooks/management-link',
      {
        schema: {
          operationId: 'core.create-webhook-management-link',
          summary: 'Request webhook management link',
          description:
            'A link to the webhook portal of the organization, where its endpoints, their secrets and their deliveries are managed ' +
            '(docs/webhooks.md). The link opens the portal once; the portal session lasts until `expiresAt`. Takes no body.',
          tags: ['Webhooks'],
          headers: Type.Object(UserContextHeaders),
          response: { 200: described(ManagementLinkResponse, 'The management link.'), ...errorResponses(400, 401, 403, 429) },
        },
        config: { auth: { scopes: ['core.webhooks:management-link'], subjects: ['client'] as const } },
      },
      async (request) => ({ managementLink: await webhooks.createManagementLink(principalOf(request)) }),
    )
  }
}

const PORTAL = '/hosted/webhooks/api'
const portalTags = ['Webhook portal']

declare module 'fastify' {
  interface FastifyRequest {
    webhookPortal: PortalGrant | null
  }
}

function grantOf(request: FastifyRequest): PortalGrant {
  if (!request.webhookPortal) throw new Error('A portal route ran without its session')
  return request.webhookPortal
}

/**
 * The API of the webhook portal page (`/hosted/webhooks/`): opened with a management link, each operation works for
 * the organization of that link only, with the portal session's token.
 */
export function webhookPortalRoutes(webhooks: WebhooksService) {
  return async function routes(app: App): Promise<void> {
    app.decorateRequest('webhookPortal', null)
    app.addHook('onRequest', async (request) => {
      if (request.routeOptions.config.webhookPortal === true) request.webhookPortal = webhooks.authenticatePortal(request.headers.authorization)
    })
    const secured = { config: { webhookPortal: true } }
    const refusals = errorResponses(401, 429)

    app.post(
      `${PORTAL}/sessions`,
      {
        schema: {
          operationId: 'webhook-portal.open-session',
          summary: 'Open a portal session',
          description: 'Exchanges a management link for a portal session, once: a link already opened, altered or expired is refused (403/410).',
          tags: portalTags,
          body: OpenPortalBody,
          response: { 201: described(PortalSessionResponse, 'The session.'), ...errorResponses(400, 403, 410, 413, 415, 429) },
        },
      },
      async (request, reply) => reply.status(201).send({ session: await webhooks.openPortal(request.body.link) }),
    )

    app.get(
      `${PORTAL}/event-types`,
      {
        ...secured,
        schema: {
          operationId: 'webhook-portal.list-event-types',
          summary: 'List event types',
          description: 'The event catalogue, with an example of each event\'s data.',
          tags: portalTags,
          response: { 200: described(EventTypesResponse, 'The catalogue.'), ...refusals },
        },
      },
      async () => ({ eventTypes: webhooks.eventTypes().map(({ type, description, sent, example }) => ({ type, description, sent, example })) }),
    )

    app.get(
      `${PORTAL}/endpoints`,
      {
        ...secured,
        schema: {
          operationId: 'webhook-portal.list-endpoints',
          summary: 'List endpoints',
          description: 'The organization\'s endpoints, oldest first.',
          tags: portalTags,
          response: { 200: described(EndpointsResponse, 'The endpoints.'), ...refusals },
        },
      },
      async (request) => ({ endpoints: await webhooks.listEndpoints(grantOf(request).organizationId) }),
    )

    app.post(
      `${PORTAL}/endpoints`,
      {
        ...secured,
        schema: {
          operationId: 'webhook-portal.create-endpoint',
          summary: 'Add an endpoint',
          description: 'Adds an endpoint with a new signing secret. In production its URL must resolve to public addresses only (checked again at every delivery).',
          tags: portalTags,
          body: CreateEndpointBody,
          response: { 201: described(EndpointResponse, 'The endpoint.'), ...errorResponses(400, 401, 409, 413, 415, 429) },
        },
      },
      async (request, reply) => reply.status(201).send({ endpoint: await webhooks.createEndpoint(grantOf(request).organizationId, request.body) }),
    )

    app.get(
      `${PORTAL}/endpoints/:endpointId`,
      {
        ...secured,
        schema: {
          operationId: 'webhook-portal.get-endpoint',
          summary: 'Get an endpoint',
          tags: portalTags,
          params: EndpointParams,
          response: { 200: described(EndpointResponse, 'The endpoint.'), ...errorResponses(400, 401, 404, 429) },
        },
      },
      async (request) => ({ endpoint: await webhooks.getEndpoint(grantOf(request).organizationId, request.params.endpointId) }),
    )

    app.patch(
      `${PORTAL}/endpoints/:endpointId`,
      {
        ...secured,
        schema: {
          operationId: 'webhook-portal.update-endpoint',
          summary: 'Edit, disable or enable an endpoint',
          tags: portalTags,
          params: EndpointParams,
          body: UpdateEndpointBody,
          response: { 200: described(EndpointResponse, 'The endpoint.'), ...errorResponses(400, 401, 404, 413, 415, 429) },
        },
      },
      async (request) => ({ endpoint: await webhooks.updateEndpoint(grantOf(request).organizationId, request.params.endpointId, request.body) }),
    )

    app.delete(
      `${PORTAL}/endpoints/:endpointId`,
      {
        ...secured,
        schema: {
          operationId: 'webhook-portal.delete-endpoint',
          summary: 'Delete an endpoint',
          description: 'Deletes the endpoint with its queue and its attempts.',
          tags: portalTags,
          params: EndpointParams,
          response: { 204: Type.Null({ description: 'Deleted.' }), ...errorResponses(400, 401, 404, 429) },
        },
      },
      async (request, reply) => {
        await webhooks.deleteEndpoint(grantOf(request).organizationId, request.params.endpointId)
        return reply.status(204).send(null)
      },
    )

    app.get(
      `${PORTAL}/endpoints/:endpointId/secret`,
      {
        ...secured,
        schema: {
          operationId: 'webhook-portal.reveal-secret',
          summary: 'Reveal the signing secret',
          tags: portalTags,
          params: EndpointParams,
          response: { 200: described(SecretResponse, 'The secret, and the previous one while it still signs.'), ...errorResponses(400, 401, 404, 429) },
        },
      },
      async (request, reply) => reply.header('cache-control', 'no-store').send(await webhooks.revealSecret(grantOf(request).organizationId, request.params.endpointId)),
    )

    app.post(
      `${PORTAL}/endpoints/:endpointId/secret/rotate`,
      {
        ...secured,
        schema: {
          operationId: 'webhook-portal.rotate-secret',
          summary: 'Rotate the signing secret',
          description: 'A new secret signs at once; the one replaced keeps signing beside it for the grace period.',
          tags: portalTags,
          params: EndpointParams,
          body: Type.Optional(RotateSecretBody),
          response: { 200: described(SecretResponse, 'The new secret, and the previous one.'), ...errorResponses(400, 401, 404, 413, 415, 429) },
        },
      },
      async (request, reply) =>
        reply.header('cache-control', 'no-store').send(await webhooks.rotateSecret(grantOf(request).organizationId, request.params.endpointId, request.body?.graceSeconds)),
    )

    app.get(
      `${PORTAL}/endpoints/:endpointId/messages`,
      {
        ...secured,
        schema: {
          operationId: 'webhook-portal.list-messages',
          summary: 'List an endpoint\'s messages',
          tags: portalTags,
          params: EndpointParams,
          querystring: ListQuery,
          response: { 200: described(MessagesResponse, 'Messages, newest first.'), ...errorResponses(400, 401, 404, 429) },
        },
      },
      async (request) => ({
        messages: await webhooks.listMessages(grantOf(request).organizationId, request.params.endpointId, { ...(request.query.status ? { status: request.query.status } : {}), limit: request.query.limit ?? 50 }),
      }),
    )

    app.get(
      `${PORTAL}/endpoints/:endpointId/attempts`,
      {
        ...secured,
        schema: {
          operationId: 'webhook-portal.list-endpoint-attempts',
          summary: 'List an endpoint\'s delivery attempts',
          tags: portalTags,
          params: EndpointParams,
          querystring: AttemptsQuery,
          response: { 200: described(AttemptsResponse, 'Attempts, newest first.'), ...errorResponses(400, 401, 404, 429) },
        },
      },
      async (request) => ({
        attempts: await webhooks.listAttempts(grantOf(request).organizationId, {
          endpointId: request.params.endpointId,
          ...(request.query.messageId ? { messageId: request.query.messageId } : {}),
          limit: request.query.limit ?? 50,
        }),
      }),
    )

    app.get(
      `${PORTAL}/events/:eventId/attempts`,
      {
        ...secured,
        schema: {
          operationId: 'webhook-portal.list-event-attempts',
          summary: 'List an event\'s delivery attempts',
          description: 'The attempts to deliver one event, to every endpoint.',
          tags: portalTags,
          params: EventParams,
          querystring: Type.Object({ limit: AttemptsQuery.properties.limit }),
          response: { 200: described(AttemptsResponse, 'Attempts, newest first.'), ...errorResponses(400, 401, 404, 429) },
        },
      },
      async (request) => ({ attempts: await webhooks.listAttempts(grantOf(request).organizationId, { eventId: request.params.eventId, limit: request.query.limit ?? 50 }) }),
    )

    app.post(
      `${PORTAL}/endpoints/:endpointId/messages/:messageId/resend`,
      {
        ...secured,
        schema: {
          operationId: 'webhook-portal.resend-message',
          summary: 'Resend a message',
          description: 'Queues the message\'s event for the endpoint again (same `webhook-id`), after what its queue holds now.',
          tags: portalTags,
          params: MessageParams,
          response: { 202: described(MessageResponse, 'The new message.'), ...errorResponses(400, 401, 404, 429) },
        },
      },
      async (request, reply) => reply.status(202).send({ message: await webhooks.resend(grantOf(request).organizationId, request.params.endpointId, request.params.messageId) }),
    )

    app.post(
      `${PORTAL}/endpoints/:endpointId/replay`,
      {
        ...secured,
        schema: {
          operationId: 'webhook-portal.replay',
          summary: 'Replay events since a time',
          description: 'Queues again, for this endpoint, every event it subscribes to that happened from `since` on (at most 10,000 at once).',
          tags: portalTags,
          params: EndpointParams,
          body: ReplayBody,
          response: { 202: described(ReplayResponse, 'What was queued.'), ...errorResponses(400, 401, 404, 413, 415, 429) },
        },
      },
      async (request, reply) => reply.status(202).send({ replay: await webhooks.replay(grantOf(request).organizationId, request.params.endpointId, new Date(request.body.since)) }),
    )

    app.post(
      `${PORTAL}/endpoints/:endpointId/test`,
      {
        ...secured,
        schema: {
          operationId: 'webhook-portal.send-test-event',
          summary: 'Send a test event',
          description: 'Queues an event of the type, with the catalogue\'s example data, for this endpoint only.',
          tags: portalTags,
          params: EndpointParams,
          body: TestEventBody,
          response: { 202: described(MessageResponse, 'The test message.'), ...errorResponses(400, 401, 404, 413, 415, 429) },
        },
      },
      async (request, reply) => reply.status(202).send({ message: await webhooks.sendTest(grantOf(request).organizationId, request.params.endpointId, request.body.type) }),
    )
  }
}
