import { sql } from 'kysely'
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
    await sql`select pg_notify(${this.channel}, ${key})`.execute(db)
  }

  /** Evicts `key` in this process at once, without waiting for the notification to come back. */
  evictLocally(key: string): void {
    for (const cache of this.subscribers) cache.evict(key)
  }

  async listen(database: DatabaseHandle): Promise<void> {
    const onMessage = (key: string) => this.evictLocally(key)
    if (database.engine === 'pglite') {
      this.stopListening = await database.listen(this.channel, onMessage)
      this.live = true
      return
    }
    this.stopListening = listenOnPostgres(database.url!, this.channel, onMessage, (live) => {
      // Changes may have been missed while disconnected: forget everything before trusting the feed again.
      for (const cache of this.subscribers) cache.clear()
      this.live = live
    })
  }

  async stop(): Promise<void> {
    this.live = false
    await this.stopListening?.()
  }
}

/** A dedicated connection that LISTENs and reconnects with backoff; reports whether it is listening. */
function listenOnPostgres(url: string, channel: string, onMessage: (payload: string) => void, onState: (live: boolean) => void): () => Promise<void> {
  let stopped = false
  let client: pg.Client | undefined
  let delay = RECONNECT_MIN_MS
  let timer: NodeJS.Timeout | undefined

  const connect = async () => {
    if (stopped) return
    const next = new pg.Client({ connectionString: url })
    client = next
    next.on('notification', (message) => {
      if (message.channel === channel) onMessage(message.payload ?? '')
    })
    next.on('error', () => {})
    next.on('end', () => {
      if (stopped || client !== next) return
      onState(false)
      retry()
    })
    try {
      await next.connect()
      await next.query(`LISTEN ${pg.escapeIdentifier(channel)}`)
      delay = RECONNECT_MIN_MS
      onState(true)
    } catch {
      onState(false)
      await next.end().catch(() => {})
      retry()
    }
  }
  const retry = () => {
    if (stopped) return
    timer = setTimeout(() => void connect(), delay)
    timer.unref()
    delay = Math.min(delay * 2, RECONNECT_MAX_MS)
  }

  void connect()
  return async () => {
    stopped = true
    clearTimeout(timer)
    await client?.end().catch(() => {})
  }
}
