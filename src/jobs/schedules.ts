import type { Db } from '../db/schema.ts'
import { uuidv7 } from '../lib/ids.ts'
import { periodStartOf } from './periods.ts'
import type { JobHandlers } from './queue.ts'
import { takePeriod } from './schedules.repository.ts'
import type { WorkerLogger } from './worker.ts'

/**
 * Recurring work: each schedule runs once per period across every worker, as a job of its own type.
 *
 * A worker looks at its schedules before each poll for jobs. When a schedule's period has begun since the worker
 * last looked, it takes the period in the database (the `schedules` row moves forward to it; see
 * `takePeriod`) and, in the same statement, enqueues the period's job: whichever worker looks first takes the
 * period, the others find it taken. The job then runs like any other (claimed by one worker, retried on failure,
 * taken over when its worker dies), so a handler runs at least once per period and must be idempotent.
 *
 * Periods a deployment missed (no worker ran) are not caught up: the first worker back takes the current period,
 * and the run does what all the missed runs would have (every handler here works from the state it finds, not
 * from the time that passed since its last run).
 */

/** What a scheduled handler is told about its run. */
export interface ScheduledRun {
  /**
   * When the run's period began: the handler's "now". A run retried later, or run twice, works from the same
   * instant, so it does the same work.
   */
  periodStart: Date
  periodMs: number
  /** The attempt being made, from 1. */
  attempt: number
  /** Aborted when the worker stops: a long run may give up early; it is then run again. */
  signal: AbortSignal
}

export interface ScheduleDefinition {
  /** The schedule's name and its job type, `<module>.<work>` (`prices.record`). */
  name: string
  /** How often it runs unless the configuration (SCHEDULE_PERIODS) says otherwise. */
  periodMs: number
  /** Attempts one period's run gets before it is given up; the next period runs regardless. */
  maxAttempts?: number
  run: (run: ScheduledRun) => Promise<void>
}

export interface Schedule {
  name: string
  periodMs: number
  maxAttempts: number
}

const DEFAULT_MAX_ATTEMPTS = 3
/** How soon a worker looks again at a schedule it could not take a period of. */
const LOOK_AGAIN_AFTER_FAILURE_MS = 1_000

/** The schedules of a deployment, registered by the modules through the container. */
export class Schedules {
  private readonly handlers: JobHandlers
  private readonly periods: ReadonlyMap<string, number>
  private readonly schedules = new Map<string, Schedule>()

  /** `periods` replaces the period of the schedules it names (SCHEDULE_PERIODS). */
  constructor(handlers: JobHandlers, periods: ReadonlyMap<string, number> = new Map()) {
    this.handlers = handlers
    this.periods = periods
  }

  register(definition: ScheduleDefinition): void {
    if (this.schedules.has(definition.name)) throw new Error(`A schedule named "${definition.name}" is already registered`)
    const schedule: Schedule = {
      name: definition.name,
      periodMs: this.periods.get(definition.name) ?? definition.periodMs,
      maxAttempts: definition.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
    }
    if (!Number.isSafeInteger(schedule.periodMs) || schedule.periodMs < 1) throw new RangeError(`The period of schedule "${definition.name}" must be a positive whole number of milliseconds`)
    this.handlers.register(definition.name, (job, context) => {
      const payload = job.payload as { periodStart?: unknown; periodMs?: unknown }
      return definition.run({
        periodStart: new Date(String(payload.periodStart)),
        periodMs: Number(payload.periodMs),
        attempt: context.attempt,
        signal: context.signal,
      })
    })
    this.schedules.set(definition.name, schedule)
  }

  all(): Schedule[] {
    return [...this.schedules.values()]
  }

  /** Names the configuration gives a period that no schedule has: a misspelt name would otherwise go unnoticed. */
  unknownPeriods(): string[] {
    return [...this.periods.keys()].filter((name) => !this.schedules.has(name))
  }
}

export interface SchedulerDeps {
  db: Db
  schedules: Schedules
  /** The clock periods are read from; the system's by default (a test may run a faster one). */
  now?: () => Date
  logger?: WorkerLogger
}

/**
 * One worker's view of the schedules: when each next needs a look. It touches the database only when a period
 * began since its last look, once per schedule and period, whatever the polling rate.
 */
export class Scheduler {
  private readonly db: Db
  private readonly schedules: Schedules
  private readonly now: () => Date
  private readonly logger: WorkerLogger | null
  /** By schedule: when its next period begins (0: not looked at yet). */
  private readonly nextLook = new Map<string, number>()

  constructor(deps: SchedulerDeps) {
    this.db = deps.db
    this.schedules = deps.schedules
    this.now = deps.now ?? (() => new Date())
    this.logger = deps.logger ?? null
  }

  /**
   * Takes every period that began since the last look and is not taken yet, enqueuing its job. Resolves with the
   * jobs it enqueued. A schedule whose look failed (the database was unreachable) is looked at again a little later.
   */
  async tick(): Promise<number> {
    const now = this.now()
    const due = this.schedules.all().filter((schedule) => now.getTime() >= (this.nextLook.get(schedule.name) ?? 0))
    // Side by side: a look is one statement, and a slow one must not make the others late for their periods.
    const taken = await Promise.all(
      due.map(async (schedule) => {
        const periodStart = periodStartOf(now, schedule.periodMs)
        try {
          const enqueued = await this.take(schedule, periodStart)
          this.nextLook.set(schedule.name, periodStart.getTime() + schedule.periodMs)
          return enqueued
        } catch (error) {
          this.nextLook.set(schedule.name, now.getTime() + Math.min(schedule.periodMs, LOOK_AGAIN_AFTER_FAILURE_MS))
          this.logger?.error({ err: error, schedule: schedule.name }, 'scheduling a recurring job failed; trying again shortly')
          return false
        }
      }),
    )
    return taken.filter(Boolean).length
  }

  /** Milliseconds until a schedule next needs a look; 0 when one does now. */
  msUntilNextLook(): number {
    const now = this.now().getTime()
    let soonest = Number.POSITIVE_INFINITY
    for (const schedule of this.schedules.all()) soonest = Math.min(soonest, (this.nextLook.get(schedule.name) ?? 0) - now)
    return Math.max(0, soonest)
  }

  private take(schedule: Schedule, periodStart: Date): Promise<boolean> {
    const at = new Date()
    return takePeriod(this.db, {
      name: schedule.name,
      periodStart,
      periodMs: schedule.periodMs,
      job: {
        id: uuidv7(at.getTime()),
        payload: { periodStart: periodStart.toISOString(), periodMs: schedule.periodMs },
        maxAttempts: schedule.maxAttempts,
      },
      at,
    })
  }
}
