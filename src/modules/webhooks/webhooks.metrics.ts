import { Counter, Gauge, Histogram, type Registry } from 'prom-client'
import type { DeliveryOutcome } from './delivery-client.ts'

/**
 * What operators watch of webhook delivery: how many messages wait (and for how long the oldest has), how long
 * attempts take, how many fail and why, and how many endpoints were disabled for failing.
 */
export class WebhookMetrics {
  private readonly attempts: Counter<'outcome' | 'error'>
  private readonly duration: Histogram<'outcome'>
  private readonly disabled: Counter
  private readonly succeeded: ReturnType<Counter<'outcome' | 'error'>['labels']>
  private readonly succeededDuration: ReturnType<Histogram<'outcome'>['labels']>

  constructor(registry: Registry, queue: () => Promise<{ pending: number; oldest: Date | null }>) {
    this.attempts = new Counter({
      name: 'tessera_webhook_attempts_total',
      help: 'Webhook delivery attempts by outcome (succeeded, failed) and failure reason.',
      labelNames: ['outcome', 'error'] as const,
      registers: [registry],
    })
    this.duration = new Histogram({
      name: 'tessera_webhook_attempt_duration_seconds',
      help: 'Time from sending a webhook message to the end of its answer, by outcome.',
      labelNames: ['outcome'] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15],
      registers: [registry],
    })
    this.succeeded = this.attempts.labels({ outcome: 'succeeded', error: 'none' })
    this.succeededDuration = this.duration.labels({ outcome: 'succeeded' })
    this.disabled = new Counter({
      name: 'tessera_webhook_endpoints_disabled_total',
      help: 'Endpoints disabled because a message failed every attempt.',
      registers: [registry],
    })
    // Read from the database when scraped: the queues are shared by every worker process.
    let last: Promise<{ pending: number; oldest: Date | null }> | null = null
    const read = () => (last ??= queue().finally(() => setTimeout(() => (last = null), 0)))
    new Gauge({
      name: 'tessera_webhook_messages_pending',
      help: 'Webhook messages waiting to be delivered, across all endpoints.',
      registers: [registry],
      async collect() {
        this.set((await read()).pending)
      },
    })
    new Gauge({
      name: 'tessera_webhook_oldest_pending_age_seconds',
      help: 'How long the oldest waiting webhook message has waited (0 when none waits).',
      registers: [registry],
      async collect() {
        const { oldest } = await read()
        this.set(oldest === null ? 0 : Math.max(0, (Date.now() - oldest.getTime()) / 1000))
      },
    })
  }

  observe(outcome: Pick<DeliveryOutcome, 'ok' | 'error' | 'durationMs'>): void {
    if (outcome.ok) {
      // The common case, with its series bound once: no label lookup an attempt.
      this.succeeded.inc()
      this.succeededDuration.observe(outcome.durationMs / 1000)
      return
    }
    this.attempts.inc({ outcome: 'failed', error: outcome.error ?? 'none' })
    this.duration.observe({ outcome: 'failed' }, outcome.durationMs / 1000)
  }

  endpointDisabled(): void {
    this.disabled.inc()
  }
}
