/**
 * What tests of secrets share: the forms a card number may leak in, a dump of every column of every table, and a
 * service that logs every line at trace level and keeps every response, to search them all.
 */
import assert from 'node:assert/strict'
import { Writable } from 'node:stream'
import { sql } from 'kysely'
import { loggerOptions } from '../src/app.ts'
import type { Engine } from '../src/db/database.ts'
import type { Db } from '../src/db/schema.ts'
import { startAppWith, type TestContext, type TestResponse } from './helpers.ts'

/** What must never leave the service nor be kept: a card number (whole, spaced, its last 12 digits) and a security code. */
export function cardSecrets(number: string): string[] {
  return [number, number.replace(/(\d{4})(?=\d)/g, '$1 '), number.slice(-12), Buffer.from(number).toString('hex'), Buffer.from(number).toString('base64')]
}

export function assertNoSecret(haystack: string, secrets: readonly string[], where: string): void {
  for (const secret of secrets) assert.ok(!haystack.includes(secret), `${where} contains ${JSON.stringify(secret)}`)
}

/** Every column of every table of the test schema, as text. */
export async function dumpDatabase(db: Db): Promise<{ table: string; column: string; value: string }[]> {
  const columns = await sql<{ table_name: string; column_name: string }>`
    select c.table_name, c.column_name
    from information_schema.columns c
    join information_schema.tables t on t.table_schema = c.table_schema and t.table_name = c.table_name
    where c.table_schema = current_schema() and t.table_type = 'BASE TABLE'
    order by c.table_name, c.ordinal_position`.execute(db)
  assert.ok(columns.rows.some((c) => c.table_name === 'external_accounts' && c.column_name === 'sealed_number'), 'the dump reads the right schema')
  const values: { table: string; column: string; value: string }[] = []
  for (const { table_name: table, column_name: column } of columns.rows) {
    const rows = await sql<{ v: string | null }>`select ${sql.ref(column)}::text as v from ${sql.table(table)}`.execute(db)
    for (const row of rows.rows) if (row.v !== null) values.push({ table, column, value: row.v })
  }
  return values
}

// --- A service logging at trace level, every response kept ---------------------------------------------------------

export interface LoggedApp {
  ctx: TestContext
  /** Every log line the service wrote. */
  lines: string[]
  /** Every response of every request made through `ctx`. */
  responses: TestResponse[]
}

/** The service as `startApp` builds it, but with pino writing every line at trace level into `lines`. */
export async function startLoggedApp(engine: Engine, env: Record<string, string> = {}): Promise<LoggedApp> {
  const lines: string[] = []
  const responses: TestResponse[] = []
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      lines.push(chunk.toString('utf8'))
      callback()
    },
  })
  const ctx = await startAppWith(engine, { ...env, LOG_LEVEL: 'trace' }, {
    logger: { ...(loggerOptions('trace') as object), stream },
    onResponse: (response) => responses.push(response),
  })
  return { ctx, lines, responses }
}
