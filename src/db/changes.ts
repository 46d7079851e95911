import { randomUUID } from 'node:crypto'
import { sql, type RawBuilder } from 'kysely'
import pg from 'pg'
import type { DatabaseHandle } from './database.ts'
import type { Executor } from './schema.ts'

/** What a cache needs to hear about changes. */
export interface Invalidatable {
  evict(key: string): void
  clear(): void
}

const RECONNECT_MIN_MS = 100
const RECONNECT_MAX_MS = 5000
/** How long a new listening connection waits for the probe it sent itself through the pool. */
const PROBE_TIMEOUT_MS = 5000
/** Payloads that test the feed; they name no cached key. */
const PROBE_PREFIX = 'tessera-listen-probe:'

/** Which key changed, on which feed's channel. */
export interface Announcement {
  channel: string
  key: string
}

/**
 * The SQL expression sending an announcement. Its parts may be a compiled query's placeholders
 * (db/compiled.ts): the channel differs between databases of one process (a schema each).
 */
export function notifying(announcement: { channel: unknown; key: unknown }): RawBuilder<unknown> {
  return sql`pg_notify(${announcement.channel}, ${announcement.key})`
}

/** Where the feed reports that it cannot hear notifications. */
export interface FeedLogger {
  error(object: object, message: string): void
  info(object: object, message: string): void
}

/**
 * Tells every process which cached rows changed. Writers call `announce` inside the transaction that
 * changes the row: PostgreSQL delivers the notification when (and only if) the transaction commits, to
 * every process listening — across a fleet of API processes on PostgreSQL, or within the one process
 * of the embedded database. While a process is not listening (before it starts, or while its listening
 * connection is being re-established) `isLive()` is false and caches must not serve from memory.
 */
export class ChangeFeed {
  readonly channel: string
  private readonly subscribers = new Set<Invalidatable>()
  private live = false
  private stopListening: (() => Promise<void>) | undefined

  constructor(schema?: string) {
    this.channel = schema ? `tessera_changes_${schema}` : 'tessera_changes'
  }

  isLive(): boolean {
    return this.live
  }

  subscribe(cache: Invalidatable): void {
    this.subscribers.add(cache)
  }

  /** Announces that the entity behind `key` changed; call it inside the transaction that changes it. */
  async announce(db: Executor, key: string): Promise<void> {
    await sql`select ${notifying(this.notification(key))}`.execute(db)
  }

  /**
   * The announcement of `key`, for a write that announces its own change in the same statement: its RETURNING list
   * carries `notifying(announcement)`, one notification per row it changed, none when it changed nothing.
   */
  notification(key: string): Announcement {
    return { channel: this.channel, key }
  }

  /** Evicts `key` in this process at once, without waiting for the notification to come back. */
  evictLocally(key: string): void {
    for (const cache of this.subscribers) cache.evict(key)
  }

  async listen(database: DatabaseHandle, logger?: FeedLogger): Promise<void> {
    const onMessage = (key: string) => this.evictLocally(key)
    if (database.engine === 'pglite') {
      this.stopListening = await database.listen(this.channel, onMessage)
      this.live = true
      return
    }
    // LISTEN belongs to a session: through a transaction-pooling proxy the notifications would go to whichever
    // client has the server connection next, so it connects to PostgreSQL itself (DATABASE_DIRECT_URL).
    this.stopListening = listenOnPostgres({
      url: database.directUrl!,
      channel: this.channel,
      onMessage,
      probe: async (payload) => {
        await sql`select pg_notify(${this.channel}, ${payload})`.execute(database.db)
      },
      onState: (live) => {
        // Changes may have been missed while disconnected: forget everything before trusting the feed again.
        for (const cache of this.subscribers) cache.clear()
        this.live = live
      },
      onDeaf: (deaf) => {
        if (deaf) {
          logger?.error(
            { channel: this.channel },
            'the LISTEN connection does not receive the notifications sent through the pool: caches are bypassed until it does. ' +
              'DATABASE_DIRECT_URL (or DATABASE_URL without it) must reach PostgreSQL itself, not a transaction-pooling proxy',
          )
        } else logger?.info({ channel: this.channel }, 'the LISTEN connection receives notifications again: caches are used')
      },
    })
  }

  async stop(): Promise<void> {
    this.live = false
    await this.stopListening?.()
  }
}

/**
 * A dedicated connection that LISTENs and reconnects with backoff; reports whether it is listening. A LISTEN sent
 * through a transaction-pooling proxy succeeds and then hears nothing, so a new connection is trusted only once a
 * probe notification sent through the pool has reached it; until then (and after a timeout, again and again) the
 * feed is not live, and `onDeaf(true)` tells it once.
 */
function listenOnPostgres(options: {
  url: string
  channel: string
  onMessage: (payload: string) => void
  probe: (payload: string) => Promise<void>
  onState: (live: boolean) => void
  onDeaf: (deaf: boolean) => void
}): () => Promise<void> {
  const { url, channel, onMessage, probe, onState, onDeaf } = options
  let stopped = false
  let client: pg.Client | undefined
  let delay = RECONNECT_MIN_MS
  let timer: NodeJS.Timeout | undefined
  let deaf = false
  let awaitingProbe: ((payload: string) => void) | undefined

  const retry = () => {
    if (stopped) return
    timer = setTimeout(() => void connect(), delay)
    timer.unref()
    delay = Math.min(delay * 2, RECONNECT_MAX_MS)
  }
  // Forgotten before it ends, so that its 'end' does not schedule a second retry (nor this one, when it already did).
  const abandon = async (next: pg.Client) => {
    const current = client === next
    if (current) client = undefined
    await next.end().catch(() => {})
    if (!current) return
    onState(false)
    retry()
  }
  // The wait starts once the probe is committed: a busy pool delays the probe, not its delivery.
  const heardProbe = async (): Promise<'heard' | 'silent' | 'failed'> => {
    const payload = `${PROBE_PREFIX}${randomUUID()}`
    const heard = new Promise<'heard'>((resolve) => {
      awaitingProbe = (received) => {
        if (received === payload) resolve('heard')
      }
    })
    try {
      await probe(payload)
    } catch {
      return 'failed'
    }
    let timeout: NodeJS.Timeout | undefined
    const silent = new Promise<'silent'>((resolve) => {
      timeout = setTimeout(() => resolve('silent'), PROBE_TIMEOUT_MS)
      timeout.unref()
    })
    const outcome = await Promise.race([heard, silent])
    clearTimeout(timeout)
    return outcome
  }

  const connect = async () => {
    if (stopped) return
    const next = new pg.Client({ connectionString: url })
    client = next
    next.on('notification', (message) => {
      if (message.channel !== channel) return
      const payload = message.payload ?? ''
      if (payload.startsWith(PROBE_PREFIX)) awaitingProbe?.(payload)
      else onMessage(payload)
    })
    next.on('error', () => {})
    next.on('end', () => {
      if (stopped || client !== next) return
      client = undefined
      onState(false)
      retry()
    })
    try {
      await next.connect()
      await next.query(`LISTEN ${pg.escapeIdentifier(channel)}`)
      const probed = await heardProbe()
      awaitingProbe = undefined
      if (stopped || client !== next) return
      if (probed === 'failed') return await abandon(next)
      if (probed === 'silent') {
        if (!deaf) onDeaf(true)
        deaf = true
        return await abandon(next)
      }
      if (deaf) onDeaf(false)
      deaf = false
      delay = RECONNECT_MIN_MS
      onState(true)
    } catch {
      await abandon(next)
    }
  }

  void connect()
  return async () => {
    stopped = true
    clearTimeout(timer)
    await client?.end().catch(() => {})
  }
}
