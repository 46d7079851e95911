import type { Registry } from 'prom-client'
import Type from 'typebox'
import { component, described } from '../../http/schemas.ts'
import type { App } from '../../http/types.ts'

const HealthStatus = component(
  'health-status',
  Type.Object({ status: Type.Union([Type.Literal('ok'), Type.Literal('unavailable')]) }, { description: 'Health of the process.' }),
)

export function healthRoutes(deps: { isDatabaseReachable: () => Promise<boolean>; metrics: Registry }) {
  return async function routes(app: App): Promise<void> {
    const operational = { config: { rateLimit: false as const } }

    app.get(
      '/health/live',
      {
        ...operational,
        schema: {
          operationId: 'operations.liveness',
          summary: 'Liveness',
          description: 'Answers while the process runs.',
          tags: ['Operations'],
          response: { 200: described(HealthStatus, 'The process is alive.') },
        },
      },
      async () => ({ status: 'ok' as const }),
    )

    app.get(
      '/health/ready',
      {
        ...operational,
        schema: {
          operationId: 'operations.readiness',
          summary: 'Readiness',
          description: 'Answers 200 when the database is reachable, 503 otherwise.',
          tags: ['Operations'],
          response: { 200: described(HealthStatus, 'Ready to serve.'), 503: described(HealthStatus, 'The database is unreachable.') },
        },
      },
      async (_request, reply) =>
        (await deps.isDatabaseReachable()) ? { status: 'ok' as const } : reply.status(503).send({ status: 'unavailable' as const }),
    )

    app.get(
      '/metrics',
      {
        ...operational,
        schema: {
          operationId: 'operations.metrics',
          summary: 'Prometheus metrics',
          description: 'Process and HTTP metrics in the Prometheus text format.',
          tags: ['Operations'],
          produces: ['text/plain'],
          response: { 200: Type.String({ description: 'Metrics in the Prometheus exposition format.' }) },
        },
      },
      async (_request, reply) => reply.header('content-type', deps.metrics.contentType).send(await deps.metrics.metrics()),
    )
  }
}
