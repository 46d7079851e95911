import fs from 'node:fs'
import path from 'node:path'
import { Kysely, PGliteDialect, PostgresDialect, sql } from 'kysely'
import { Migrator } from 'kysely/migration'
import pg from 'pg'
import type { Config } from '../config.ts'
import { CommitHooks } from './commit-hooks.ts'
import { PreparedStatements, preparingClient } from './prepared.ts'
import { migrationProvider } from './migrations/index.ts'
import type { Database, Db } from './schema.ts'

export type Engine = 'pglite' | 'postgres'

export interface DatabaseHandle {
  db: Db
  engine: Engine
  /** The PostgreSQL schema the tables live in, when not the default one. */
  schema?: string
  /** The PostgreSQL connection string of the pool (postgres engine only); it may go through a transaction-pooling proxy. */
  url?: string
  /**
   * A connection string that reaches PostgreSQL itself (postgres engine only), for what needs a session of its own:
   * LISTEN, session-level advisory locks. The same as `url` unless DATABASE_DIRECT_URL says otherwise.
   */
  directUrl?: string
  /** Work that commits with each transaction that wrote (the audit trail registers its row here). */
  commitHooks: CommitHooks
  /** Calls `onMessage` for each notification on `channel` (embedded engine only); returns the unsubscriber. */
  listen(channel: string, onMessage: (payload: string) => void): Promise<() => Promise<void>>
  /**
   * Runs `work` on one connection that stays one PostgreSQL session throughout (opened on `directUrl`, closed
   * after): what holds a session-level lock or setting across statements and transactions, which a
   * transaction-pooling proxy would spread over other sessions. The embedded engine has one session: its own.
   */
  withSession<T>(work: (db: Db) => Promise<T>): Promise<T>
  /** A copy of the embedded engine's whole data directory (a tarball), to open another in-memory database from. */
  snapshot?(): Promise<Blob>
  close(): Promise<void>
}

export type DatabaseOptions = Pick<Config, 'databaseUrl' | 'databasePoolSize' | 'dataDir'> & {
  /** Config.databasePreparedStatements; `auto` when not given. */
  databasePreparedStatements?: Config['databasePreparedStatements']
  /** Reaches PostgreSQL itself when `databaseUrl` goes through a transaction-pooling proxy (Config.databaseDirectUrl). */
  databaseDirectUrl?: string | null
  /**
   * PostgreSQL schema to use instead of `public`. Set as a startup parameter, which PgBouncer refuses: direct connections only.
   */
  searchPath?: string
  /**
   * The embedded engine in memory (`dataDir` null) starts from this copy of a data directory (`snapshot()`) instead
   * of an empty cluster, skipping initdb, the bulk of its opening: the test suite opens each of its databases from
   * one migrated copy.
   */
  embeddedSnapshot?: Blob
}

/**
 * Named prepared statements belong to a PostgreSQL session. Behind a transaction-pooling proxy (DATABASE_DIRECT_URL
 * set to another URL) consecutive transactions may run on different sessions, which would not know the name
 * (PgBouncer before 1.21), so `auto` leaves them off there.
 */
export function usesPreparedStatements(options: DatabaseOptions): boolean {
  const setting = options.databasePreparedStatements ?? 'auto'
  if (setting !== 'auto') return setting === 'on'
  return options.databaseDirectUrl == null || options.databaseDirectUrl === options.databaseUrl
}

/** Opens PostgreSQL when a URL is configured, otherwise the embedded PGlite database. */
export async function openDatabase(options: DatabaseOptions): Promise<DatabaseHandle> {
  if (options.databaseUrl !== null) {
    const directUrl = options.databaseDirectUrl ?? options.databaseUrl
    const startup = options.searchPath ? { options: `-c search_path=${options.searchPath}` } : {}
    const preparing = usesPreparedStatements(options)
    const pool = new pg.Pool({
      connectionString: options.databaseUrl,
      max: options.databasePoolSize,
      ...startup,
      ...(preparing ? { Client: preparingClient(new PreparedStatements()) } : {}),
    })
    // An idle client that loses its connection must not crash the process; the pool replaces it.
    pool.on('error', () => {})
    const commitHooks = new CommitHooks()
    const db = new Kysely<Database>({ dialect: commitHooks.wrap(new PostgresDialect({ pool })) })
    return {
      db,
      commitHooks,
      engine: 'postgres',
      url: options.databaseUrl,
      directUrl,
      ...(options.searchPath ? { schema: options.searchPath } : {}),
      listen: () => Promise.reject(new Error('On PostgreSQL, listen on a dedicated connection (see ChangeFeed)')),
      withSession: async (work) => {
        const session = new pg.Pool({ connectionString: directUrl, max: 1, ...startup })
        session.on('error', () => {})
        const sessionDb = new Kysely<Database>({ dialect: commitHooks.wrap(new PostgresDialect({ pool: session })) })
        try {
          return await work(sessionDb)
        } finally {
          await sessionDb.destroy()
        }
      },
      close: () => db.destroy(),
    }
  }

  const { PGlite } = await import('@electric-sql/pglite')
  const dir = options.dataDir === null ? undefined : path.join(options.dataDir, 'pglite')
  if (dir) fs.mkdirSync(dir, { recursive: true })
  if (dir && options.embeddedSnapshot) throw new Error('An embedded database starts from a snapshot in memory only')
  const pglite = await PGlite.create(dir, options.embeddedSnapshot ? { loadDataDir: options.embeddedSnapshot } : {})
  const commitHooks = new CommitHooks()
  const db = new Kysely<Database>({ dialect: commitHooks.wrap(new PGliteDialect({ pglite })) })
  return {
    db,
    commitHooks,
    engine: 'pglite',
    listen: (channel, onMessage) => pglite.listen(channel, onMessage),
    withSession: (work) => work(db),
    snapshot: () => pglite.dumpDataDir('none'),
    close: () => db.destroy(),
  }
}

/**
 * Applies the pending migrations, once however many processes start together: Kysely's migrator holds a
 * session-level advisory lock from before its transaction to after it, so it runs on a session of its own.
 */
export async function migrateToLatest(handle: Pick<DatabaseHandle, 'schema' | 'withSession'>): Promise<string[]> {
  const { error, results } = await handle.withSession((db) => {
    // The migration bookkeeping tables live beside the application tables, never in another schema.
    const migrator = new Migrator({ db, provider: migrationProvider, ...(handle.schema ? { migrationTableSchema: handle.schema } : {}) })
    return migrator.migrateToLatest()
  })
  if (error) {
    const failed = results?.find((r) => r.status === 'Error')?.migrationName
    throw new Error(`Migration ${failed ?? ''} failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error })
  }
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName)
}

export async function isReachable(db: Db): Promise<boolean> {
  try {
    await sql`select 1`.execute(db)
    return true
  } catch {
    return false
  }
}
