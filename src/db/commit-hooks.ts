import { CompiledQuery, type DatabaseConnection, type Dialect, type Driver, type QueryResult, type TransactionSettings } from 'kysely'

/**
 * Work that must commit with a transaction's own writes (the audit trail's row), as one statement: `sql` runs only
 * when `condition` (SQL) holds and numbers its parameters from `$<offset + 1>`; `after` runs once the statement settled,
 * with whether its work committed: whether the write it stands beside changed rows and committed (false when the
 * statement or the COMMIT failed). Before the COMMIT of a transaction that wrote, the statement runs
 * on the transaction's connection (offset 0, condition `true`); beside a single write outside a transaction it is a
 * part of the write's own statement (see `foldable`), its condition whether that write changed rows. Undefined when
 * the hook has nothing to write.
 */
export type CommitHook = (offset: number, condition: string) => { sql: string; parameters: readonly unknown[]; after(wrote: boolean): void } | undefined

/**
 * A write that can carry the hooks' work in its own statement instead of a transaction of its own: one INSERT,
 * UPDATE or DELETE built by Kysely (never raw text, whose words prove nothing) with a RETURNING list, whose rows say
 * whether it changed any, and no WITH (a data-modifying CTE must be at the top level). One statement is one round
 * trip where BEGIN, write, hook, COMMIT are four.
 */
export function foldable(query: CompiledQuery): boolean {
  const node = query.query as { kind: string; returning?: unknown; with?: unknown; explain?: unknown }
  return (
    (node.kind === 'InsertQueryNode' || node.kind === 'UpdateQueryNode' || node.kind === 'DeleteQueryNode') &&
    node.returning !== undefined &&
    node.with === undefined &&
    node.explain === undefined
  )
}

/** Runs statements on the connection of the transaction being committed. */
export interface HookConnection {
  executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>>
}

/**
 * A statement that changes rows. Reads (SELECT, advisory locks, `nextval`) are not writes: a transaction that only
 * read has nothing to stand for.
 */
export function isWrite(sql: string): boolean {
  const head = /^\s*(\w+)/.exec(sql)?.[1]?.toLowerCase()
  if (head === 'insert' || head === 'update' || head === 'delete' || head === 'merge') return true
  return head === 'with' && /\b(?:insert\s+into|update\s+\S+\s+set|delete\s+from|merge\s+into)\b/i.test(sql)
}

/**
 * Whether a write statement changed rows: an UPDATE or DELETE that matched nothing, an INSERT … ON CONFLICT DO
 * NOTHING that met its conflict, did not. A statement whose count is unknown (a write inside WITH, whose count is
 * its SELECT's) is taken to have written.
 */
function changedRows(sql: string, result: QueryResult<unknown>): boolean {
  if (result.numAffectedRows === undefined || /^\s*with\b/i.test(sql)) return true
  return result.numAffectedRows > 0n
}

/** The connection a wrapped driver hands out: the inner one, and whether its open transaction wrote. */
class TrackedConnection implements DatabaseConnection {
  readonly inner: DatabaseConnection
  inTransaction = false
  wrote = false
  private readonly driver: HookedDriver

  constructor(inner: DatabaseConnection, driver: HookedDriver) {
    this.inner = inner
    this.driver = driver
  }

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    if (!isWrite(query.sql)) return this.inner.executeQuery<R>(query)
    if (this.inTransaction) {
      const result = await this.inner.executeQuery<R>(query)
      if (changedRows(query.sql, result)) this.wrote = true
      return result
    }
    // A write outside any transaction (autocommit) that a hook wants to stand beside: one statement carrying the
    // hooks' work when it can, else a transaction of its own.
    if (!this.driver.wantsCommitHook()) return this.inner.executeQuery<R>(query)
    if (foldable(query)) {
      const folded = this.driver.fold(query)
      return this.executeFolded<R>(folded.query, folded.after)
    }
    await this.driver.beginTransaction(this, {})
    try {
      const result = await this.inner.executeQuery<R>(query)
      this.wrote = changedRows(query.sql, result)
      await this.driver.commitTransaction(this)
      return result
    } catch (error) {
      if (this.inTransaction) await this.driver.rollbackTransaction(this).catch(() => {})
      throw error
    }
  }

  private async executeFolded<R>(query: CompiledQuery, after: ((wrote: boolean) => void)[]): Promise<QueryResult<R>> {
    let wrote = false
    try {
      const result = await this.inner.executeQuery<R>(query)
      wrote = result.rows.length > 0
      // The statement returns the write's RETURNING rows, one per changed row: the count the write had.
      return { ...result, numAffectedRows: BigInt(result.rows.length) }
    } finally {
      for (const done of after) done(wrote)
    }
  }

  streamQuery<R>(query: CompiledQuery, chunkSize: number): AsyncIterableIterator<QueryResult<R>> {
    if (this.inTransaction && isWrite(query.sql)) this.wrote = true
    return this.inner.streamQuery<R>(query, chunkSize)
  }
}

/** A driver that runs the registered hooks before each COMMIT of a transaction that wrote. */
class HookedDriver implements Driver {
  private readonly inner: Driver
  private readonly hooks: CommitHooks

  constructor(inner: Driver, hooks: CommitHooks) {
    this.inner = inner
    this.hooks = hooks
    // Savepoints (Kysely's controlled transactions) exist only when the inner driver has them.
    if (inner.savepoint) this.savepoint = (connection, name, compile) => inner.savepoint!(innerOf(connection), name, compile)
    if (inner.rollbackToSavepoint) this.rollbackToSavepoint = (connection, name, compile) => inner.rollbackToSavepoint!(innerOf(connection), name, compile)
    if (inner.releaseSavepoint) this.releaseSavepoint = (connection, name, compile) => inner.releaseSavepoint!(innerOf(connection), name, compile)
  }

  savepoint?: Driver['savepoint']
  rollbackToSavepoint?: Driver['rollbackToSavepoint']
  releaseSavepoint?: Driver['releaseSavepoint']

  wantsCommitHook(): boolean {
    return this.hooks.wanted()
  }

  fold(query: CompiledQuery): { query: CompiledQuery; after: ((wrote: boolean) => void)[] } {
    return this.hooks.fold(query)
  }

  init(): Promise<void> {
    return this.inner.init()
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    return new TrackedConnection(await this.inner.acquireConnection(), this)
  }

  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    await this.inner.beginTransaction(innerOf(connection), settings)
    const tracked = connection as TrackedConnection
    tracked.inTransaction = true
    tracked.wrote = false
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    const tracked = connection as TrackedConnection
    const settle = tracked.wrote ? await this.hooks.beforeCommit(tracked.inner) : []
    try {
      await this.inner.commitTransaction(tracked.inner)
    } catch (error) {
      // Not committed, as far as this process can know: the hooks' work is still to do.
      for (const done of settle) done(false)
      throw error
    }
    tracked.inTransaction = false
    for (const done of settle) done(true)
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    const tracked = connection as TrackedConnection
    tracked.inTransaction = false
    await this.inner.rollbackTransaction(tracked.inner)
  }

  releaseConnection(connection: DatabaseConnection): Promise<void> {
    return this.inner.releaseConnection(innerOf(connection))
  }

  destroy(): Promise<void> {
    return this.inner.destroy()
  }
}

function innerOf(connection: DatabaseConnection): DatabaseConnection {
  return connection instanceof TrackedConnection ? connection.inner : connection
}

/**
 * The hooks of one database: registered by the modules that need them (the audit trail), run by the driver. A hook
 * also says whether the current asynchronous context needs it at all (`wanted`), so that writes made outside any
 * request (workers, the CLI) cost nothing.
 */
export class CommitHooks {
  private readonly registered: { wanted: () => boolean; hook: CommitHook }[] = []

  add(wanted: () => boolean, hook: CommitHook): void {
    this.registered.push({ wanted, hook })
  }

  /**
   * The write as one statement with the wanted hooks' work beside it: `with written as (<write>), hook_1 as (…)
   * table written` (no `*`: db/prepared.ts prepares it), or the write alone when no hook has work. Every part of one
   * statement sees the same snapshot and commits or fails together, as a transaction of its own would.
   */
  fold(query: CompiledQuery): { query: CompiledQuery; after: ((wrote: boolean) => void)[] } {
    const parameters = [...query.parameters]
    const parts = [`written as (${query.sql})`]
    const after: ((wrote: boolean) => void)[] = []
    for (const entry of this.registered) {
      const part = entry.wanted() ? entry.hook(parameters.length, 'exists (select from written)') : undefined
      if (!part) continue
      parts.push(`hook_${after.length + 1} as (${part.sql})`)
      parameters.push(...part.parameters)
      after.push(part.after)
    }
    if (after.length === 0) return { query, after }
    return { query: CompiledQuery.raw(`with ${parts.join(', ')} table written`, parameters), after }
  }

  wanted(): boolean {
    return this.registered.some((entry) => entry.wanted())
  }

  /**
   * Runs the wanted hooks' statements on the connection of a transaction about to commit; what to call once the
   * COMMIT succeeded (`true`) or failed (`false`). A statement that fails settles every hook begun as not written.
   */
  async beforeCommit(connection: HookConnection): Promise<((committed: boolean) => void)[]> {
    const settle: ((committed: boolean) => void)[] = []
    try {
      for (const entry of this.registered) {
        const part = entry.wanted() ? entry.hook(0, 'true') : undefined
        if (!part) continue
        settle.push(part.after)
        await connection.executeQuery(CompiledQuery.raw(part.sql, [...part.parameters]))
      }
    } catch (error) {
      for (const done of settle) done(false)
      throw error
    }
    return settle
  }

  /** The dialect with its driver wrapped so that these hooks run before every COMMIT of a transaction that wrote. */
  wrap(dialect: Dialect): Dialect {
    return {
      createAdapter: () => dialect.createAdapter(),
      createDriver: () => new HookedDriver(dialect.createDriver(), this),
      createIntrospector: (db) => dialect.createIntrospector(db),
      createQueryCompiler: () => dialect.createQueryCompiler(),
    }
  }
}
