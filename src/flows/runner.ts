import type { Db, Executor, FlowRow, JobRow, Tx } from '../db/schema.ts'
import { enqueue, JobDeferral, wakeJobs, type JobHandlers } from '../jobs/queue.ts'
import { isRetryable } from '../lib/errors.ts'
import * as repository from './flows.repository.ts'

/** One flow as its steps see it. */
export interface Flow<D> {
  organizationId: string
  /** The flow's id: the id of the transaction it moves. */
  id: string
  type: string
  /** The index of the step being run. */
  step: number
  data: D
  createdAt: Date
}

/**
 * What a step's `call` answers for a flow whose outside party has no outcome yet: the flow stays at the step, its
 * job comes back at `until` (the attempt not counted), and the call is made again then.
 */
export class FlowWait {
  readonly until: Date
  constructor(until: Date) {
    this.until = until
  }
}

/**
 * What a step's `call` answers for a flow the outside party refused for good (an order rejected, a payment
 * returned): that flow fails at this step — its done steps compensated, its failure recorded — on its own, and
 * the other flows of the call go on.
 */
export class FlowFailure {
  readonly error: unknown
  constructor(error: unknown) {
    this.error = error
  }
}

export interface FlowStep<D> {
  name: string
  /**
   * Runs before the step's database transaction, outside any: for what must not happen inside one, such as
   * looking up (and on first use creating) the system accounts the step posts to.
   */
  prepare?(flows: readonly Flow<D>[]): Promise<void>
  /**
   * Calls an outside party (a payment rail, a card processor) for the flows, outside any database transaction and
   * only once every earlier step of theirs has committed: the flow's row, which names this step as the next one,
   * is the record made before the side effect. The call must be idempotent under a key derived from the flow and
   * the step, because a crash after the call and before its commit makes it again. Answers, per flow, what to
   * merge into its data (committed with the step, and seen by its `run`), a `FlowWait`, or a `FlowFailure`. A
   * call that throws is handled like a `run` that throws (so a refusal of one flow among many is a
   * `FlowFailure`, not a throw: the others' calls are not made again).
   */
  call?(flows: readonly Flow<D>[]): Promise<ReadonlyMap<string, Partial<D> | FlowWait | FlowFailure>>
  /**
   * Does the step for flows of one organization, inside `tx`; the runner records the step and moves each flow
   * on in that same transaction, so the effect and its record commit together or not at all. Given several
   * flows, the step may share work between them (one ledger write for all); when it throws, the runner runs
   * each flow alone, so one flow's failure holds no other back. Returns what to merge into each flow's data.
   *
   * A step must be idempotent: after a crash between its commit and the job's completion it is not run again
   * (the flow moved on), but a duplicated job (or a request advancing its own flow) may find it not yet committed
   * and run it again; only one of the two commits it.
   *
   * Throwing a domain error that is not retryable fails the flow for good: the steps already done are
   * compensated, newest first, then the definition's `onFailed` records the failure. Anything else is retried
   * with backoff, and fails the flow the same way after the job's last attempt.
   */
  run?(tx: Tx, flows: readonly Flow<D>[]): Promise<ReadonlyMap<string, Partial<D>> | void>
  /** Undoes the step's effect when a later step fails for good (releases a hold, reverses a posting); idempotent. */
  compensate?(tx: Tx, flow: Flow<D>): Promise<void>
}

export interface FlowDefinition<D> {
  type: string
  steps: readonly FlowStep<D>[]
  /** Records the failure once the done steps are compensated, in the same transaction (the transaction fails). */
  onFailed(tx: Tx, flow: Flow<D>, error: unknown): Promise<void>
  /** How many flows of this type one job run takes at most (they share database transactions per step). */
  batchSize?: number
  /**
   * The step after which the flow may no longer be undone on an error: once it has run, money may have left (an
   * order the rail accepted). An error in a later step is then retried without end — the job deferred, no attempt
   * spent, the error kept as its last error and logged — rather than compensated at the last attempt; only a
   * `FlowFailure` (the outside party's own word that nothing happened) still compensates.
   */
  irreversibleAfter?: string
}

/** How long a flow past its point of no return waits before it tries a failing step again. */
export const IRREVERSIBLE_RETRY_MS = 60_000

export interface StartFlow<D> {
  organizationId: string
  id: string
  data: D
  /**
   * How many of the first steps to run now, in the caller's transaction: their errors reach the caller, who then
   * rolls back and leaves nothing behind (a commit refused for insufficient balance creates no transaction).
   */
  inline?: number
  /**
   * Delays the flow's job: for a flow whose next step the caller makes itself once the transaction commits
   * (`advance`), the job is then only the safety net that resumes it should the caller die first.
   */
  jobDelayMs?: number
}

/** A defined flow: start one in the transaction that creates what it moves. */
export interface FlowHandle<D> {
  readonly type: string
  start(tx: Tx, input: StartFlow<D>): Promise<void>
  /**
   * Runs the flow's next `steps` steps now, in this process (after its start committed), as the worker would:
   * safe beside the worker, since a step commits only from the step it started at. An error is left for the
   * flow's job to retry; answers it, if any.
   */
  advance(organizationId: string, id: string, steps: number): Promise<unknown>
  /**
   * Makes the jobs of waiting flows due now (their outside party answered); answers how many were waiting. Given the
   * database transaction that records the news, the wake-up commits with it: a crash cannot keep one without the other.
   */
  wake(organizationId: string, ids: readonly string[], executor?: Executor): Promise<number>
}

interface FlowJob {
  organizationId: string
  flowId: string
}

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error)
}

/** Whether the flow's next step comes after the definition's point of no return. */
function pastNoReturn(definition: { steps: readonly { name: string }[]; irreversibleAfter?: string }, step: number): boolean {
  if (definition.irreversibleAfter === undefined) return false
  const index = definition.steps.findIndex((candidate) => candidate.name === definition.irreversibleAfter)
  return index >= 0 && step > index
}

function toFlow<D>(row: FlowRow): Flow<D> {
  return { organizationId: row.organization_id, id: row.id, type: row.type, step: row.step, data: row.data as D, createdAt: row.created_at }
}

export const FLOW_JOB_PREFIX = 'flow:'

/**
 * Runs durable money flows on the job queue. A flow is a fixed list of steps; its row says which step is next.
 * Starting a flow writes that row and a job in the caller's transaction; the worker then runs the steps one
 * database transaction each, the step's effect, its history row and the move to the next step committing
 * together. So after a crash (kill -9 at any point) the job is taken over once its lease passes and the flow
 * resumes at the first step not committed. Two runs of one flow's steps at once (a duplicated job, a request
 * advancing its own flow) commit each step once: the run that finds its flow moved on goes on from where it stands,
 * and the job completes only once its flow has ended (it is deferred while the flow waits).
 */
export class FlowRunner {
  private readonly db: Db
  private readonly jobs: JobHandlers

  constructor(deps: { db: Db; jobs: JobHandlers }) {
    this.db = deps.db
    this.jobs = deps.jobs
  }

  define<D extends object>(definition: FlowDefinition<D>): FlowHandle<D> {
    if (definition.steps.length === 0) throw new Error(`Flow ${definition.type} has no steps`)
    if (new Set(definition.steps.map((step) => step.name)).size !== definition.steps.length) throw new Error(`Flow ${definition.type} repeats a step name`)
    const idle = definition.steps.find((step) => !step.run && !step.call)
    if (idle) throw new Error(`Step ${idle.name} of flow ${definition.type} neither runs nor calls`)
    if (definition.irreversibleAfter !== undefined && !definition.steps.some((step) => step.name === definition.irreversibleAfter)) {
      throw new Error(`Flow ${definition.type} has no step ${definition.irreversibleAfter} to be irreversible after`)
    }
    const jobType = FLOW_JOB_PREFIX + definition.type
    this.jobs.registerBatch(jobType, (jobs) => this.runJobs(definition, jobs), { maxJobs: definition.batchSize ?? 1 })
    return {
      type: definition.type,
      start: async (tx, input) => {
        const at = new Date()
        const inline = Math.min(input.inline ?? 0, definition.steps.length)
        const unfit = definition.steps.slice(0, inline).find((step) => step.prepare || step.call)
        if (unfit) throw new Error(`Step ${unfit.name} of flow ${definition.type} works outside a transaction: it cannot run inline`)
        const flow: Flow<D> = { organizationId: input.organizationId, id: input.id, type: definition.type, step: 0, data: input.data, createdAt: at }
        const history = []
        for (; flow.step < inline; flow.step++) {
          const step = definition.steps[flow.step]!
          const patch = (await step.run!(tx, [flow]))?.get(flow.id)
          if (patch) flow.data = { ...flow.data, ...patch }
          history.push({ organizationId: flow.organizationId, flowId: flow.id, step: step.name, action: 'run' as const, position: flow.step, at })
        }
        const completed = flow.step >= definition.steps.length
        await repository.insertFlow(tx, { organizationId: flow.organizationId, id: flow.id, type: definition.type, step: flow.step, status: completed ? 'completed' : 'running', data: flow.data as Record<string, unknown>, at })
        await repository.recordSteps(tx, history)
        if (!completed) {
          await enqueue(tx, {
            type: jobType,
            organizationId: flow.organizationId,
            payload: { organizationId: flow.organizationId, flowId: flow.id } satisfies FlowJob,
            ...(input.jobDelayMs !== undefined ? { runAt: new Date(at.getTime() + input.jobDelayMs) } : {}),
          })
        }
      },
      advance: async (organizationId, id, steps) => {
        const [row] = await repository.findRunning(this.db, organizationId, [id])
        if (!row) return undefined
        try {
          await this.runSteps(definition, [toFlow<D>(row)], steps)
          return undefined
        } catch (error) {
          return error
        }
      },
      wake: (organizationId, ids, executor) => wakeJobs(executor ?? this.db, jobType, organizationId, 'flowId', ids),
    }
  }

  /**
   * Runs the flows of the jobs to their end, or until they wait for an outside party. Flows of one organization at
   * the same step run their remaining steps together: a database transaction for each stretch of steps between
   * outside calls. When that fails, each flow runs alone, one step per database transaction, so that the failing
   * step is found, recorded and handled (retried later, or compensated) without holding the other flows back.
   * Resolves with the jobs to retry later (a retryable failure before their last attempt) or to defer (a wait).
   */
  private async runJobs<D extends object>(definition: FlowDefinition<D>, jobs: readonly JobRow[]): Promise<Map<string, unknown>> {
    const unfinished = new Map<string, unknown>()
    const jobOf = new Map(jobs.map((job) => [(job.payload as unknown as FlowJob).flowId, job]))
    const pending: Flow<D>[] = []
    for (const [organizationId, group] of Map.groupBy(jobs, (job) => (job.payload as unknown as FlowJob).organizationId)) {
      const rows = await repository.findRunning(this.db, organizationId, group.map((job) => (job.payload as unknown as FlowJob).flowId))
      pending.push(...rows.map((row) => toFlow<D>(row)))
    }
    for (const group of Map.groupBy(pending, (flow) => `${flow.organizationId}|${flow.step}`).values()) {
      let alone: readonly Flow<D>[] = group
      try {
        const { flows: through, waiting } = await this.runSteps(definition, group, definition.steps.length - group[0]!.step)
        for (const [flowId, until] of waiting) unfinished.set(jobOf.get(flowId)!.id, new JobDeferral(until))
        // The flows that neither went through every step nor wait were failed by their outside party, or moved on by
        // another run of their steps (a request advancing its own flow, this job run twice): that run may have
        // stopped short of the end, so each goes on alone from where it now stands (an ended one is let be).
        const done = new Set(through.map((flow) => flow.id))
        alone = group.filter((flow) => !done.has(flow.id) && !waiting.has(flow.id))
      } catch {
        // Each flow alone below, step by step, from wherever the group left it.
      }
      for (const flow of alone) {
        const outcome = await this.runAlone(definition, flow, jobOf.get(flow.id)!)
        if (outcome !== undefined) unfinished.set(jobOf.get(flow.id)!.id, outcome)
      }
    }
    return unfinished
  }

  /**
   * Runs one flow's remaining steps one database transaction each; resolves with the error to retry on or the
   * deferral to wait with, if any.
   */
  private async runAlone<D extends object>(definition: FlowDefinition<D>, flow: Flow<D>, job: JobRow): Promise<unknown> {
    // Where the flow stands now: a group run may have moved it on before it failed.
    const [row] = await repository.findRunning(this.db, flow.organizationId, [flow.id])
    if (!row) return undefined
    let current = toFlow<D>(row)
    while (current.step < definition.steps.length) {
      let moved: Flow<D> | undefined
      try {
        const result = await this.runSteps(definition, [current], 1)
        const until = result.waiting.get(current.id)
        if (until) return new JobDeferral(until)
        ;[moved] = result.flows
      } catch (error) {
        const lastAttempt = job.attempts >= job.max_attempts
        if (isRetryable(error) && !lastAttempt) return error
        if (pastNoReturn(definition, current.step)) {
          return new JobDeferral(new Date(Date.now() + IRREVERSIBLE_RETRY_MS), `step ${definition.steps[current.step]!.name} of ${definition.type} flow ${current.id}: ${describe(error)}`)
        }
        try {
          await this.fail(definition, current, error)
          return undefined
        } catch (failure) {
          // Compensation itself could not commit: the job is retried and tries the whole failure again.
          return failure
        }
      }
      if (moved === undefined) {
        // Another run of its steps moved it on (or ended it) first; that run may stop short of the end (a request
        // runs only the steps it makes itself), so this one goes on from where the flow now stands. Its step only
        // ever grows: this ends.
        const [now] = await repository.findRunning(this.db, current.organizationId, [current.id])
        if (!now) return undefined
        current = toFlow<D>(now)
        continue
      }
      current = moved
    }
    return undefined
  }

  /**
   * Runs `count` steps from the flows' current one, for flows of one organization at the same step. The steps go
   * in stretches: a step that calls an outside party starts a stretch (every step before it has committed), and
   * the steps after it, up to the next call, join it; each stretch is one database transaction. Every step's
   * `prepare` runs first, outside the transaction. Each step's history row and the move past the stretch commit
   * with the steps' effects. Flows that moved on meanwhile (a duplicated job) are left out, and flows whose call
   * answered `FlowWait` stop there. Resolves with the flows as they now stand, and the waiting ones.
   */
  private async runSteps<D extends object>(definition: FlowDefinition<D>, flows: readonly Flow<D>[], count: number): Promise<{ flows: Flow<D>[]; waiting: Map<string, Date> }> {
    const waiting = new Map<string, Date>()
    let current = [...flows]
    let remaining = count
    while (remaining > 0 && current.length > 0 && current[0]!.step < definition.steps.length) {
      const first = current[0]!.step
      let length = 1
      while (length < remaining && first + length < definition.steps.length && !definition.steps[first + length]!.call) length++
      const stretch = definition.steps.slice(first, first + length)
      for (const step of stretch) await step.prepare?.(current)
      const called = new Map<string, Partial<D>>()
      const opening = stretch[0]!
      if (opening.call) {
        const answers = await opening.call(current)
        const failed = new Set<string>()
        for (const flow of current) {
          const answer = answers.get(flow.id)
          if (answer instanceof FlowWait) waiting.set(flow.id, answer.until)
          else if (answer instanceof FlowFailure) {
            await this.fail(definition, flow, answer.error)
            failed.add(flow.id)
          } else if (answer) called.set(flow.id, answer)
        }
        current = current.filter((flow) => !waiting.has(flow.id) && !failed.has(flow.id))
        if (current.length === 0) break
      }
      current = await this.commitStretch(definition, current, stretch, called)
      remaining -= length
    }
    return { flows: current, waiting }
  }

  private commitStretch<D extends object>(definition: FlowDefinition<D>, flows: readonly Flow<D>[], stretch: readonly FlowStep<D>[], called: ReadonlyMap<string, Partial<D>>): Promise<Flow<D>[]> {
    const { organizationId, step: first } = flows[0]!
    return this.db.transaction().execute(async (tx) => {
      let current = (await repository.lockAtStep(tx, organizationId, flows.map((flow) => flow.id), first)).map((row) => toFlow<D>(row))
      if (current.length === 0) return []
      const at = new Date()
      const history = []
      // What the stretch's steps recorded, per flow: written with the move past the stretch, in one statement.
      const recorded = new Map<string, Partial<D>>()
      for (const [offset, step] of stretch.entries()) {
        const patches = new Map<string, Partial<D>>(offset === 0 ? called : [])
        if (patches.size > 0) current = current.map((flow) => ({ ...flow, data: { ...flow.data, ...patches.get(flow.id) } }))
        for (const [id, patch] of (await step.run?.(tx, current)) ?? []) patches.set(id, { ...patches.get(id), ...patch })
        for (const [id, patch] of patches) recorded.set(id, { ...recorded.get(id), ...patch })
        history.push(...current.map((flow) => ({ organizationId, flowId: flow.id, step: step.name, action: 'run' as const, position: first + offset, at })))
        current = current.map((flow) => ({ ...flow, step: first + offset + 1, data: { ...flow.data, ...patches.get(flow.id) } }))
      }
      const next = first + stretch.length
      await repository.advance(tx, organizationId, current.map((flow) => ({ id: flow.id, patch: (recorded.get(flow.id) ?? {}) as Record<string, unknown> })), { step: next, completed: next >= definition.steps.length, at })
      await repository.recordSteps(tx, history)
      return current
    })
  }

  /** Compensates the done steps of a flow, newest first, then records its failure: all in one transaction. */
  private async fail<D extends object>(definition: FlowDefinition<D>, flow: Flow<D>, error: unknown): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      const [row] = await repository.lockAtStep(tx, flow.organizationId, [flow.id], flow.step)
      if (!row) return
      const locked = toFlow<D>(row)
      const at = new Date()
      const history = []
      let position = locked.step
      for (let index = locked.step - 1; index >= 0; index--) {
        const step = definition.steps[index]!
        if (!step.compensate) continue
        await step.compensate(tx, locked)
        history.push({ organizationId: locked.organizationId, flowId: locked.id, step: step.name, action: 'compensate' as const, position: position++, at })
      }
      await definition.onFailed(tx, locked, error)
      history.push({ organizationId: locked.organizationId, flowId: locked.id, step: definition.steps[locked.step]!.name, action: 'fail' as const, position, error: describe(error), at })
      await repository.recordSteps(tx, history)
      await repository.markFailed(tx, locked.organizationId, locked.id, describe(error), at)
    })
  }
}

/** Where a flow stands, for tests and operators. */
export async function flowState(db: Db, organizationId: string, id: string): Promise<{ status: string; step: number; history: { step: string; action: string; error: string | null }[] } | undefined> {
  const row = await repository.find(db, organizationId, id)
  if (!row) return undefined
  const history = await repository.stepsOf(db, organizationId, id)
  return { status: row.status, step: row.step, history: history.map(({ step, action, error }) => ({ step, action, error })) }
}
