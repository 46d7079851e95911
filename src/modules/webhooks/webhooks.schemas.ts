import Type, { type Static } from 'typebox'
import { component, Timestamp, Uuid } from '../../http/schemas.ts'
import { EVENT_CATALOGUE } from './catalogue.ts'

export const ManagementLinkResponse = component(
  'create-webhook-management-link-response',
  Type.Object({
    managementLink: component(
      'webhook-management-link',
      Type.Object(
        {
          url: Type.String({ format: 'uri', description: 'Opens the webhook portal for the organization, once, until it expires.' }),
          expiresAt: { ...Timestamp, description: 'When the link, and the portal session it opens, expire.' },
        },
        { description: 'A link to the webhook portal.' },
      ),
    ),
  }),
)

const EventType = Type.Union(
  EVENT_CATALOGUE.map((entry) => Type.Literal(entry.type)),
  { description: 'An event type of the catalogue.' },
)

export const OpenPortalBody = component(
  'webhook-portal-session-request',
  Type.Object(
    { link: Type.String({ minLength: 1, maxLength: 1024, description: 'The `link` parameter of the management link\'s fragment.' }) },
    { additionalProperties: false },
  ),
)

export const PortalSessionResponse = component(
  'webhook-portal-session-response',
  Type.Object({
    session: Type.Object(
      {
        token: Type.String({ description: 'Send it as `Authorization: Bearer <token>` to the portal\'s operations.' }),
        expiresAt: { ...Timestamp, description: 'When the session ends (when the link expires).' },
      },
      { description: 'The portal session the link opened.' },
    ),
  }),
)

export const WebhookEndpoint = component(
  'webhook-endpoint',
  Type.Object(
    {
      id: { ...Uuid, description: 'The endpoint.' },
      url: Type.String({ format: 'uri', description: 'Where messages are sent (POST).' }),
      description: Type.String({ description: 'What the endpoint is for.' }),
      eventTypes: Type.Array(Type.String(), { description: 'The event types it receives; empty for every type of the catalogue.' }),
      status: Type.Union([Type.Literal('enabled'), Type.Literal('disabled')], { description: 'A disabled endpoint receives nothing; its queue waits.' }),
      disabledAt: Type.Optional({ ...Timestamp, description: 'When it was disabled.' }),
      disabledReason: Type.Optional(Type.Union([Type.Literal('manual'), Type.Literal('delivery-failing')], { description: 'Why: by hand, or a message failed every attempt.' })),
      secretRotatedAt: Type.Optional({ ...Timestamp, description: 'When its secret was last rotated.' }),
      previousSecretExpiresAt: Type.Optional({ ...Timestamp, description: 'Until when the secret it replaced still signs beside it.' }),
      createdAt: Timestamp,
      updatedAt: Timestamp,
    },
    { description: 'A webhook endpoint of the organization.' },
  ),
)

export const EndpointResponse = component('webhook-endpoint-response', Type.Object({ endpoint: WebhookEndpoint }))
export const EndpointsResponse = component('webhook-endpoints-response', Type.Object({ endpoints: Type.Array(WebhookEndpoint) }))

const Url = Type.String({ minLength: 1, maxLength: 2048, description: 'An absolute http(s) URL, without credentials or fragment.' })
const Description = Type.String({ maxLength: 500, description: 'What the endpoint is for.' })
const EventTypes = Type.Array(EventType, { maxItems: 100, description: 'The event types it receives; empty (the default) for all.' })

export const CreateEndpointBody = component(
  'create-webhook-endpoint-request',
  Type.Object({ url: Url, description: Type.Optional(Description), eventTypes: Type.Optional(EventTypes) }, { additionalProperties: false }),
)
export type CreateEndpointBody = Static<typeof CreateEndpointBody>

export const UpdateEndpointBody = component(
  'update-webhook-endpoint-request',
  Type.Object(
    {
      url: Type.Optional(Url),
      description: Type.Optional(Description),
      eventTypes: Type.Optional(EventTypes),
      enabled: Type.Optional(Type.Boolean({ description: 'Disable, or enable again (what waited in its queue is then sent).' })),
    },
    { additionalProperties: false, minProperties: 1 },
  ),
)
export type UpdateEndpointBody = Static<typeof UpdateEndpointBody>

export const SecretResponse = component(
  'webhook-endpoint-secret-response',
  Type.Object({
    secret: Type.String({ pattern: '^whsec_', description: 'The signing secret (`whsec_` and base64): verify `webhook-signature` with it.' }),
    previousSecret: Type.Optional(Type.String({ pattern: '^whsec_', description: 'The secret it replaced, while it still signs beside it.' })),
    previousSecretExpiresAt: Type.Optional({ ...Timestamp, description: 'When the previous secret stops signing.' }),
  }),
)

export const RotateSecretBody = component(
  'rotate-webhook-secret-request',
  Type.Object(
    {
      graceSeconds: Type.Optional(
        Type.Integer({ minimum: 0, maximum: 604_800, description: 'How long the replaced secret keeps signing beside the new one (default: the deployment\'s, 24 hours); 0 stops it at once.' }),
      ),
    },
    { additionalProperties: false },
  ),
)

export const WebhookMessage = component(
  'webhook-message',
  Type.Object(
    {
      id: { ...Uuid, description: 'The message: one event queued for one endpoint.' },
      endpointId: Uuid,
      eventId: { ...Uuid, description: 'The event it carries (the body\'s `id`).' },
      eventType: Type.String(),
      webhookId: Type.String({ description: 'Its `webhook-id` header: the same on every attempt, resend and replay of the event.' }),
      origin: Type.Union([Type.Literal('event'), Type.Literal('resend'), Type.Literal('replay'), Type.Literal('test')], { description: 'Why it was queued.' }),
      status: Type.Union([Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('failed')]),
      attempts: Type.Integer({ minimum: 0, description: 'Attempts made.' }),
      nextAttemptAt: Type.Optional({ ...Timestamp, description: 'Pending: when it is tried next (once the messages before it are done).' }),
      createdAt: Timestamp,
      finishedAt: Type.Optional({ ...Timestamp, description: 'When it was delivered, or failed for good.' }),
    },
    { description: 'A webhook message and where its delivery stands.' },
  ),
)

export const MessageResponse = component('webhook-message-response', Type.Object({ message: WebhookMessage }))
export const MessagesResponse = component('webhook-messages-response', Type.Object({ messages: Type.Array(WebhookMessage) }))

export const WebhookAttempt = component(
  'webhook-attempt',
  Type.Object(
    {
      id: Uuid,
      endpointId: Uuid,
      messageId: Uuid,
      eventId: Uuid,
      attempt: Type.Integer({ minimum: 1, description: 'Which attempt of its message.' }),
      url: Type.String({ description: 'Where it was sent.' }),
      succeeded: Type.Boolean({ description: 'A 2xx answer in time.' }),
      responseStatus: Type.Optional(Type.Integer({ description: 'The status answered.' })),
      durationMs: Type.Integer({ minimum: 0 }),
      responseExcerpt: Type.String({ description: 'The first kilobyte of the answer\'s body.' }),
      error: Type.Optional(Type.String({ description: '`timeout`, `address-refused`, `dns-failed`, `connection-failed`, `tls-failed`, `redirect`, `http-status`, `url-invalid` or `event-missing`.' })),
      errorMessage: Type.Optional(Type.String()),
      createdAt: Timestamp,
    },
    { description: 'One attempt to deliver a message.' },
  ),
)

export const AttemptsResponse = component('webhook-attempts-response', Type.Object({ attempts: Type.Array(WebhookAttempt) }))

export const ListQuery = Type.Object({
  status: Type.Optional(Type.Union([Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('failed')], { description: 'Only messages of this status.' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50, description: 'How many, newest first.' })),
})

export const AttemptsQuery = Type.Object({
  messageId: Type.Optional({ ...Uuid, description: 'Only the attempts of this message.' }),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50, description: 'How many, newest first.' })),
})

export const ReplayBody = component(
  'replay-webhook-messages-request',
  Type.Object({ since: { ...Timestamp, description: 'Replay the events that happened from then on (at most 30 days ago).' } }, { additionalProperties: false }),
)

export const ReplayResponse = component(
  'replay-webhook-messages-response',
  Type.Object({
    replay: Type.Object({
      queued: Type.Integer({ minimum: 0, description: 'Messages queued.' }),
      since: Timestamp,
      until: Type.Optional({ ...Timestamp, description: 'Set when the replay stopped at its limit (10,000): replay again from here for the rest.' }),
    }),
  }),
)

export const TestEventBody = component(
  'send-webhook-test-event-request',
  Type.Object({ type: EventType }, { additionalProperties: false }),
)

export const EventTypesResponse = component(
  'webhook-event-types-response',
  Type.Object({
    eventTypes: Type.Array(
      Type.Object({
        type: Type.String(),
        description: Type.String(),
        sent: Type.Boolean({ description: 'False for a type of the catalogue that this deployment never sends.' }),
        example: Type.Record(Type.String(), Type.Unknown(), { description: 'An example of the event\'s `data`.' }),
      }),
    ),
  }),
)

// `x-entity`: what a malformed id is reported as missing (src/http/path-ids.ts), as an unknown one is.
const EndpointId = { ...Uuid, 'x-entity': 'webhook-endpoint' }
export const EndpointParams = Type.Object({ endpointId: EndpointId })
export const MessageParams = Type.Object({ endpointId: EndpointId, messageId: { ...Uuid, 'x-entity': 'webhook-message' } })
export const EventParams = Type.Object({ eventId: Uuid })
