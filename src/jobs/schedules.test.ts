import assert from 'node:assert/strict'
import { test } from 'node:test'
import { JobHandlers } from './queue.ts'
import { Schedules } from './schedules.ts'

const run = async () => {}

test('a schedule runs as a job of its name, at its own period unless the configuration replaces it', () => {
  const handlers = new JobHandlers()
  const schedules = new Schedules(handlers, new Map([['prices.record', 200]]))
  schedules.register({ name: 'prices.record', periodMs: 60_000, run })
  schedules.register({ name: 'jobs.retention', periodMs: 3_600_000, maxAttempts: 5, run })
  assert.deepEqual(schedules.all(), [
    { name: 'prices.record', periodMs: 200, maxAttempts: 3 },
    { name: 'jobs.retention', periodMs: 3_600_000, maxAttempts: 5 },
  ])
  assert.deepEqual(handlers.types(), ['prices.record', 'jobs.retention'])
  assert.deepEqual(schedules.unknownPeriods(), [])
})

test('a period the configuration gives to no schedule is reported; a name is registered once', () => {
  const schedules = new Schedules(new JobHandlers(), new Map([['prices.recrod', 1_000]]))
  schedules.register({ name: 'prices.record', periodMs: 60_000, run })
  assert.deepEqual(schedules.unknownPeriods(), ['prices.recrod'])
  assert.throws(() => schedules.register({ name: 'prices.record', periodMs: 1_000, run }), /already registered/)
  assert.throws(() => schedules.register({ name: 'files.orphan-bytes', periodMs: 0, run }), RangeError)
})

test('the handler hears which period it runs for, whatever time it runs at', async () => {
  const handlers = new JobHandlers()
  const heard: unknown[] = []
  new Schedules(handlers).register({ name: 'kyc.self-categorization-expiry', periodMs: 60_000, run: async (scheduled) => void heard.push(scheduled) })
  const signal = new AbortController().signal
  const job = { id: '0195f0e2-0000-7000-8000-000000000000', type: 'kyc.self-categorization-expiry', payload: { periodStart: '2026-03-04T10:17:00.000Z', periodMs: 60_000 }, attempts: 2 }
  const failures = await handlers.run([job as never], signal)
  assert.equal(failures.size, 0)
  assert.deepEqual(heard, [{ periodStart: new Date('2026-03-04T10:17:00.000Z'), periodMs: 60_000, attempt: 2, signal }])
})
