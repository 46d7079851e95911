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
 * Never prepared: a `*` (its result's columns are fixed when the statement is parsed, and a migration that changes
 * the table makes PostgreSQL refuse it: "cached plan must not change result type"), and row locks and queue claims
 * (`FOR UPDATE … SKIP LOCKED`), whose best plan depends on the values (PostgreSQL may switch a prepared statement to
 * one generic plan after five runs).
 */
const UNPREPARABLE = /\*|\bfor\s+(?:no\s+key\s+)?(?:update|share)\b|\bskip\s+locked\b/i
/**
 * Errors that say a name cannot be used as node-postgres believes: the result's shape changed under it (0A000, a
 * migration), or the session is not the one that parsed it (26000 missing, 42P05 already there: a transaction-pooling
 * proxy in front). The text then runs unnamed from then on.
 */
const NAME_UNUSABLE = new Set(['26000', '42P05'])
const isNameUnusable = (error: unknown): boolean => {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown }
  return (typeof code === 'string' && NAME_UNUSABLE.has(code)) || (code === '0A000' && typeof message === 'string' && message.includes('cached plan'))
}

/**
 * Which statement texts run as named prepared statements: the hot ones, chosen by use. PostgreSQL parses and
 * plans a named statement once per connection (and, for simple lookups, keeps a generic plan), where an unnamed one
 * is parsed and planned on every execution: for the short queries of the read paths that is most of their cost.
 * Texts that run rarely or are built with varying shapes (lists of any length) stay unnamed, so the set stays small.
 */
export class PreparedStatements {
  private readonly names = new Map<string, string>()
  private readonly runs = new Map<string, number>()
  /** Texts whose name could not be used (`forget`): they run unnamed for the rest of the process's life. */
  private readonly refused = new Set<string>()

  /** The name to run `text` under, or undefined to run it unnamed. */
  nameFor(text: string): string | undefined {
    const name = this.names.get(text)
    if (name !== undefined) return this.refused.has(text) ? undefined : name
    if (this.names.size >= MAX_PREPARED_TEXTS || !PREPARABLE.test(text) || UNPREPARABLE.test(text)) return undefined
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

  /** Runs `text` unnamed from now on (its slot is not given to another text: the set stays bounded). */
  forget(text: string): void {
    if (this.names.has(text)) this.refused.add(text)
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
      const run = super.query as (...rest: unknown[]) => Promise<unknown>
      const [text, values] = args
      if (args.length === 2 && typeof text === 'string' && Array.isArray(values)) {
        const name = statements.nameFor(text)
        if (name !== undefined) {
          // The status before this statement ('I': no transaction open): its ReadyForQuery comes after the error.
          const autocommit = this.getTransactionStatus() === 'I'
          return run.call(this, { name, text, values }).catch((error: unknown) => {
            if (!isNameUnusable(error)) throw error
            statements.forget(text)
            // Alone, the statement ran nothing: it runs again unnamed. In a transaction, the error aborted it.
            if (autocommit) return run.call(this, text, values)
            throw error
          }) as never
        }
      }
      return run.apply(this, args) as never
    }
  }
  return PreparingClient
}
