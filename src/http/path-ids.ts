import { notFound, type DomainError } from '../lib/errors.ts'
import { isUuid, UUID_PATTERN } from '../lib/ids.ts'

type Schema = Record<string, unknown>

/** A path parameter that names an entity by its id. */
export interface PathId {
  name: string
  /** The ids' aliases the schema allows besides a UUID (`me`). */
  aliases: ReadonlySet<string>
  /** The entity a malformed id is reported as missing: the same `details.entity` as an unknown id's. */
  entity: (params: Record<string, unknown>) => string
}

const isUuidSchema = (schema: unknown): boolean => {
  const { format, pattern } = (schema ?? {}) as Schema
  return format === 'uuid' || pattern === UUID_PATTERN
}

/** A UUID, or a union of a UUID and literal aliases (`anyOf: [{format: uuid}, {const: 'me'}]`); undefined otherwise. */
function aliasesOf(schema: Schema): string[] | undefined {
  if (isUuidSchema(schema)) return []
  const branches = (schema.anyOf ?? schema.oneOf) as Schema[] | undefined
  if (!Array.isArray(branches) || branches.filter(isUuidSchema).length !== 1) return undefined
  const aliases = branches.flatMap((branch) => (typeof branch.const === 'string' ? [branch.const] : []))
  return aliases.length === branches.length - 1 ? aliases : undefined
}

const kebab = (name: string) => name.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`)

/**
 * The entity a parameter names: `x-entity` when the schema says it, the singular of the `entity` parameter's
 * value for `entityId` (metadata: `/core/{entity}/{entityId}`), or else the parameter's name without `Id`
 * (`externalAccountId` → `external-account`).
 */
function entityNamer(name: string, schema: Schema, properties: Record<string, unknown>): PathId['entity'] {
  const declared = schema['x-entity']
  if (typeof declared === 'string') return () => declared
  if (name === 'entityId' && 'entity' in properties) return (params) => String(params.entity).replace(/s$/, '')
  const base = kebab(name.replace(/Id$/, ''))
  return () => base
}

/**
 * The id parameters of a route's `params` schema: every parameter whose schema is a UUID (`format: uuid` or the
 * UUID pattern), alone or with literal aliases. Read from the schema, so that every route, present and future,
 * gets the same rule without code of its own.
 */
export function pathIdsOf(paramsSchema: unknown): PathId[] {
  const properties = ((paramsSchema ?? {}) as Schema).properties as Record<string, Schema> | undefined
  if (!properties) return []
  return Object.entries(properties).flatMap(([name, schema]) => {
    const aliases = aliasesOf(schema)
    return aliases === undefined ? [] : [{ name, aliases: new Set(aliases), entity: entityNamer(name, schema, properties) }]
  })
}

/**
 * Parses the id parameters in place: a UUID becomes its canonical lower-case form, an alias stays. A malformed
 * id names nothing that could exist: it is answered as an unknown one is, `404 entity_not_found`, never a 400
 * that would tell a malformed id from a foreign one, and never a query the database would refuse.
 */
export function parsePathIds(ids: readonly PathId[], params: Record<string, unknown>): DomainError | undefined {
  for (const id of ids) {
    const value = params[id.name]
    if (typeof value !== 'string') continue
    if (id.aliases.has(value)) continue
    if (!isUuid(value)) return notFound(id.entity(params))
    params[id.name] = value.toLowerCase()
  }
  return undefined
}
