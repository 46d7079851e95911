import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { describe, test } from 'node:test'
import type { JobRow } from '../src/db/schema.ts'
import { claimDue } from '../src/jobs/jobs.repository.ts'
import { JobDeferral, JobHandlers } from '../src/jobs/queue.ts'
import { Worker } from '../src/jobs/worker.ts'
import { flowState, FlowRunner, FlowWait, type FlowHandle, type FlowStep } from '../src/flows/runner.ts'
import { ENGINES, useApp } from './helpers.ts'

/**
 * The flow runner when two runs of one flow's steps overlap: a request advancing its own flow while the flow's job
 * runs, or a job run twice (a worker's lease lapsed while it ran, and another claim took the job). Whichever run
 * commits a step first moves the flow on; the other must not take that for the flow's end.
 */

let typeCounter = 0

/** Holds one caller (the first unless told) until the test opens the gate; the others pass at once. */
class Gate {
  private readonly held: number
  constructor(held = 1) {
    this.held = held
  }

  private open!: () => void
  private readonly opened = new Promise<void>((resolve) => (this.open = resolve))
  private entered!: () => void
  /** Resolves when the first caller is held at the gate. */
  readonly holding = new Promise<void>((resolve) => (this.entered = resolve))
  private callers = 0

  /** Answers which caller this was (1 for the first). */
  async pass(): Promise<number> {
    const caller = ++this.callers
    if (caller !== this.held) return caller
    this.entered()
    await this.opened
    return caller
  }

  release(): void {
    this.open()
  }
}

interface Data {
  seen?: string[]
}

for (const engine of ENGINES) {
  describe(`flows whose runs overlap [${engine}]`, () => {
    const suite = useApp(engine)

    /** A flow of its own type per test: a first step that calls out (held at the gate), then what the test adds. */
    function defineFlow(gate: Gate, after: FlowStep<Data>[], options: { firstCallFails?: boolean } = {}): { flow: FlowHandle<Data>; handlers: JobHandlers; type: string } {
      const handlers = new JobHandlers()
      const runner = new FlowRunner({ db: suite.ctx.database.db, jobs: handlers })
      const type = `test.overlap-${process.pid}-${++typeCounter}`
      const flow = runner.define<Data>({
        type,
        steps: [
          {
            name: 'call-out',
            async call(flows) {
              const caller = await gate.pass()
              if (options.firstCallFails && caller === 1) throw new Error('the outside party cannot be reached')
              return new Map(flows.map((one) => [one.id, {}]))
            },
          },
          ...after,
        ],
        onFailed: async () => assert.fail('no flow of these tests fails'),
      })
      return { flow, handlers, type: `flow:${type}` }
    }

    async function start(flow: FlowHandle<Data>): Promise<string> {
      const id = randomUUID()
      const organizationId = suite.ctx.client.organizationId
      await suite.ctx.database.db.transaction().execute((tx) => flow.start(tx, { organizationId, id, data: {}, jobDelayMs: 0 }))
      return id
    }

    const state = (id: string) => flowState(suite.ctx.database.db, suite.ctx.client.organizationId, id)

    test('a job whose flow a request advanced meanwhile runs the steps left, rather than ending with the flow half done', async () => {
      const gate = new Gate()
      const ran: string[] = []
      const { flow, handlers } = defineFlow(gate, [{ name: 'settle', run: async (_tx, flows) => void ran.push(...flows.map((one) => one.id)) }])
      const id = await start(flow)
      const worker = new Worker({ db: suite.ctx.database.db, handlers, pollIntervalMs: 10, concurrency: 2, leaseMs: 30_000 })
      // The job reaches the call and is held there; the request makes the same call and commits the step first.
      const draining = worker.drain()
      await gate.holding
      assert.equal(await flow.advance(suite.ctx.client.organizationId, id, 1), undefined)
      assert.equal((await state(id))?.step, 1, 'the request moved the flow past its call')
      gate.release()
      await draining
      const after = await state(id)
      assert.equal(after?.status, 'completed', 'the job ran the step the request left')
      assert.deepEqual(after?.history.map((row) => `${row.step}:${row.action}`), ['call-out:run', 'settle:run'])
      assert.deepEqual(ran, [id], 'the step ran once')
    })

    test('a flow run alone after its batch failed, moved on meanwhile, goes on from there too', async () => {
      // The job's first call fails, so the runner takes the flow alone; that call (the second) is held while the
      // request (the third) commits the step.
      const gate = new Gate(2)
      const ran: string[] = []
      const { flow, handlers } = defineFlow(gate, [{ name: 'settle', run: async (_tx, flows) => void ran.push(...flows.map((one) => one.id)) }], { firstCallFails: true })
      const id = await start(flow)
      const worker = new Worker({ db: suite.ctx.database.db, handlers, pollIntervalMs: 10, concurrency: 2, leaseMs: 30_000 })
      const draining = worker.drain()
      await gate.holding
      assert.equal(await flow.advance(suite.ctx.client.organizationId, id, 1), undefined)
      gate.release()
      await draining
      const after = await state(id)
      assert.equal(after?.status, 'completed')
      assert.deepEqual(after?.history.map((row) => `${row.step}:${row.action}`), ['call-out:run', 'settle:run'])
      assert.deepEqual(ran, [id])
    })

    test('a job run twice at once: the run that finds its flow moved on goes on from there, and waits with it', async () => {
      const gate = new Gate()
      // The outside party has no outcome yet: the flow waits at its second step, whichever run gets there.
      const until = new Date(Date.now() + 3_600_000)
      const { flow, handlers, type } = defineFlow(gate, [{ name: 'confirm', call: async (flows) => new Map(flows.map((one) => [one.id, new FlowWait(until)])) }])
      const id = await start(flow)
      const [job] = await claimDue(suite.ctx.database.db, { workerId: 'test', limit: 1, leaseMs: 30_000, types: [type] })
      assert.ok(job)
      // The first run is held at the call; the second (the job taken over) makes the call and moves the flow on.
      const first = handlers.run([job], new AbortController().signal)
      await gate.holding
      const second = await handlers.run([job as JobRow], new AbortController().signal)
      gate.release()
      for (const outcome of [second, await first]) {
        const deferral = outcome.get(job.id)
        assert.ok(deferral instanceof JobDeferral, 'each run leaves the job waiting, none completes it')
        assert.equal(deferral.runAt.getTime(), until.getTime())
      }
      const after = await state(id)
      assert.equal(after?.status, 'running')
      assert.equal(after?.step, 1, 'the flow waits at its second step')
    })
  })
}
