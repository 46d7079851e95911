import { collectDefaultMetrics, Histogram, Registry } from 'prom-client'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { hooksOf, type App } from './types.ts'

/**
 * Prometheus metrics of one app instance: process metrics and request counts and durations per route, added to
 * `registry` (the container's, which holds the background work's metrics) or a registry of their own.
 */
export function registerMetrics(app: App, registry: Registry = new Registry()): Registry {
  collectDefaultMetrics({ register: registry })
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Duration of HTTP requests by method, route template and status code.',
    labelNames: ['method', 'route', 'status_code'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  })
  // One label-bound child per series, made on its first response and reused: the series are bounded (route
  // templates, not URLs; methods and statuses), so are these maps.
  const recorderOf = (route: string) => {
    const series = new Map<string, { observe(value: number): void }>()
    // A callback hook rather than an async one: it runs on every response and has nothing to await.
    return (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
      const key = `${request.method} ${reply.statusCode}`
      let child = series.get(key)
      if (child === undefined) {
        child = duration.labels({ method: request.method, route, status_code: String(reply.statusCode) })
        series.set(key, child)
      }
      child.observe(reply.elapsedTime / 1000)
      done()
    }
  }
  // Each route records under its own template, known when it is added: nothing to look up per request
  // (`request.routeOptions` builds a copy on every read). Register this before any route.
  app.addHook('onRoute', (route) => {
    const record = recorderOf(route.url)
    route.onResponse = [...hooksOf(route.onResponse), record]
  })
  // Unmatched URLs share one label so that scanning traffic cannot grow the series without bound.
  const recordUnmatched = recorderOf('unmatched')
  app.addHook('onResponse', (request, reply, done) => {
    if (request.is404) recordUnmatched(request, reply, done)
    else done()
  })
  return registry
}
