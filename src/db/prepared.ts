import { createHash } from 'node:crypto'
import pg from 'pg'

/** A statement's text becomes a prepared statement once it has run this many times on the process's pool. */
const RUNS_BEFORE_PREPARING = 3
/** At most this many distinct texts are prepared: each costs every connection its parse tree and plan. */
const MAX_PREPARED_TEXTS = 256
/** Texts counted while they are not prepared yet; the count starts over when it is full. */
const MAX_COUNTED_TEXTS = 4096

/** Only statements that plan; transaction control and session commands gain nothing. */
const PREPARABLE = /^\s*(?:select|insert|update|delete|with)\b/i

/**
 * Which statement texts run as named prepared statements: the hot ones, chosen by use. PostgreSQL parses and
 * plans a named statement once per connection (and, for simple lookups, keeps a generic plan), where an unnamed one
 * is parsed and planned on every execution: for the short queries of the read paths that is most of their cost.
 * Texts that run rarely or are built with varying shapes (lists of any length) stay unnamed, so the set stays small.
 */
export class PreparedStatements {
  private readonly names = new Map<string, string>()
  private readonly runs = new Map<string, number>()

  /** The name to run `text` under, or undefined to run it unnamed. */
  nameFor(text: string): string | undefined {
    const name = this.names.get(text)
    if (name !== undefined) return name
    if (this.names.size >= MAX_PREPARED_TEXTS || !PREPARABLE.test(text)) return undefined
    const seen = (this.runs.get(text) ?? 0) + 1
    if (seen < RUNS_BEFORE_PREPARING) {
      if (this.runs.size >= MAX_COUNTED_TEXTS) this.runs.clear()
      this.runs.set(text, seen)
      return undefined
    }
    this.runs.delete(text)
    // A digest of the text: the same text has the same name on every connection, and another text never has it.
    const named = `tessera_${createHash('sha256').update(text).digest('base64url').slice(0, 32)}`
    this.names.set(text, named)
    return named
  }

  get size(): number {
    return this.names.size
  }
}

/**
 * A pg client class whose `query(text, values)` (the form Kysely sends) runs the chosen statements prepared.
 * node-postgres parses a named statement once per connection and then only binds and executes it.
 */
export function preparingClient(statements: PreparedStatements): typeof pg.Client {
  class PreparingClient extends pg.Client {
    // node-postgres overloads `query` many ways; only the (text, values) form is rewritten, the rest passes through.
    override query(...args: unknown[]): never {
      const [text, values] = args
      if (args.length === 2 && typeof text === 'string' && Array.isArray(values)) {
        const name = statements.nameFor(text)
        if (name !== undefined) return (super.query as (...rest: unknown[]) => never)({ name, text, values })
      }
      return (super.query as (...rest: unknown[]) => never)(...args)
    }
  }
  return PreparingClient
}
