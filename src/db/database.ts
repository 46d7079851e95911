import fs from 'node:fs'
import path from 'node:path'
import { Kysely, PGliteDialect, PostgresDialect, sql } from 'kysely'
import { Migrator } from 'kysely/migration'
import pg from 'pg'
import type { Config } from '../config.ts'
import { migrationProvider } from './migrations/index.ts'
import type { Database, Db } from './schema.ts'

export type Engine = 'pglite' | 'postgres'

export interface DatabaseHandle {
  db: Db
  engine: Engine
  /** The PostgreSQL schema the tables live in, when not the default one. */
  schema?: string
  /** The PostgreSQL connection string (postgres engine only), for connections outside the pool. */
  url?: string
  /** Calls `onMessage` for each notification on `channel` (embedded engine only); returns the unsubscriber. */
  listen(channel: string, onMessage: (payload: string) => void): Promise<() => Promise<void>>
  close(): Promise<void>
}

export type DatabaseOptions = Pick<Config, 'databaseUrl' | 'databasePoolSize' | 'dataDir'> & {
  /** PostgreSQL schema to use instead of `public`; lets test suites share one server without sharing tables. */
  searchPath?: string
}

/** Opens PostgreSQL when a URL is configured, otherwise the embedded PGlite database. */
export async function openDatabase(options: DatabaseOptions): Promise<DatabaseHandle> {
  if (options.databaseUrl !== null) {
    const pool = new pg.Pool({
      connectionString: options.databaseUrl,
      max: options.databasePoolSize,
      ...(options.searchPath ? { options: `-c search_path=${options.searchPath}` } : {}),
    })
    // An idle client that loses its connection must not crash the process; the pool replaces it.
    pool.on('error', () => {})
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) })
    return {
      db,
      engine: 'postgres',
      url: options.databaseUrl,
      ...(options.searchPath ? { schema: options.searchPath } : {}),
      listen: () => Promise.reject(new Error('On PostgreSQL, listen on a dedicated connection (see ChangeFeed)')),
      close: () => db.destroy(),
    }
  }

  const { PGlite } = await import('@electric-sql/pglite')
  const dir = options.dataDir === null ? undefined : path.join(options.dataDir, 'pglite')
  if (dir) fs.mkdirSync(dir, { recursive: true })
  const pglite = await PGlite.create(dir)
  const db = new Kysely<Database>({ dialect: new PGliteDialect({ pglite }) })
  return {
    db,
    engine: 'pglite',
    listen: (channel, onMessage) => pglite.listen(channel, onMessage),
    close: () => db.destroy(),
  }
}

export async function migrateToLatest(handle: Pick<DatabaseHandle, 'db' | 'schema'>): Promise<string[]> {
  // The migration bookkeeping tables live beside the application tables, never in another schema.
  const migrator = new Migrator({ db: handle.db, provider: migrationProvider, ...(handle.schema ? { migrationTableSchema: handle.schema } : {}) })
  const { error, results } = await migrator.migrateToLatest()
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
