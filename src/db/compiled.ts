import type { CompiledQuery, Compilable, QueryResult } from 'kysely'
import type { Executor } from './schema.ts'

/** A value standing for a named argument while a query is built; found again among the compiled parameters. */
class Placeholder {
  readonly name: string
  constructor(name: string) {
    this.name = name
  }
}

/**
 * A query of a hot path, built and compiled by Kysely once rather than on every call (building and compiling cost
 * more than the round trip's own work in Tessera for a one-row statement). `build` receives placeholders for the
 * named arguments and must use each as one whole value (`= any(${values.tags})` for a list, never `in` with an
 * array, which Kysely expands); every call then only fills in the parameters. The text never changes, so
 * PostgreSQL also sees one statement (db/prepared.ts).
 *
 * What Kysely decides from a value is decided once, from the placeholder: never put one where the value would change
 * the SQL (`eb.and({ column: value })` writes `is` for null or a boolean, `set({ column: undefined })` leaves the
 * column out). The query is built on the first executor: one with plugins or another schema needs its own.
 */
export function compiledOnce<Name extends string, Row>(
  names: readonly Name[],
  build: (db: Executor, values: Record<Name, never>) => Compilable<Row>,
): (db: Executor, values: Record<Name, unknown>) => Promise<QueryResult<Row>> {
  let compiled: { query: CompiledQuery<Row>; slots: (Name | { value: unknown })[] } | undefined
  return async (db, values) => {
    if (!compiled) {
      const placeholders = Object.fromEntries(names.map((name) => [name, new Placeholder(name)])) as unknown as Record<Name, never>
      const query = build(db, placeholders).compile()
      const slots = query.parameters.map((parameter) => (parameter instanceof Placeholder ? (parameter.name as Name) : { value: parameter }))
      const missing = names.filter((name) => !slots.includes(name))
      if (missing.length > 0) throw new Error(`compiledOnce: ${missing.join(', ')} not used as whole parameters of ${query.sql}`)
      compiled = { query, slots }
    }
    const parameters = compiled.slots.map((slot) => (typeof slot === 'string' ? values[slot] : slot.value))
    // The compiled query itself with this call's parameters: its operation tree still says what it is (a write with
    // RETURNING that db/commit-hooks.ts may fold).
    return await db.executeQuery<Row>({ ...compiled.query, parameters })
  }
}
