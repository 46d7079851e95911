import type { Ajv } from 'ajv'
import { inputViolations } from './input-checks.ts'
import { requestInvalid, type RequestContext } from './errors.ts'
import { parsePathIds, pathIdsOf } from './path-ids.ts'
import { toViolations, type SchemaError } from './violations.ts'

const CONTEXTS: Record<string, RequestContext> = { body: 'body', querystring: 'query', params: 'params', headers: 'headers' }

/** What Fastify's validation reads from a validator's answer: an error to raise, or the input is valid. */
type Outcome = true | { error: Error }

/**
 * Compiles the validator of one part of a route's request (body, query, path parameters, headers) with its
 * schema, and adds the checks every part of every route gets whatever its schema says:
 * - text the database cannot store, and bodies nested too deep, are 400 `request_invalid` (input-checks.ts);
 * - path parameters that are ids (see path-ids.ts) are parsed to their canonical form, and a malformed one is
 *   404 `entity_not_found`, after every other parameter of the path is checked (so that an unknown
 *   `{entity}` stays a 400).
 */
export function validatorCompiler(ajvs: { body: Ajv; text: Ajv }) {
  return function compile({ schema, httpPart }: { schema: unknown; httpPart?: string }): (data: unknown) => Outcome {
    const part = httpPart ?? 'body'
    const context = CONTEXTS[part] ?? 'body'
    const validate = (part === 'body' ? ajvs.body : ajvs.text).compile(schema as object)
    const ids = part === 'params' ? pathIdsOf(schema) : []
    const idNames = new Set(ids.map((id) => id.name))
    // Of the query and the headers, what the operation declares: anything else is ignored, whatever it holds.
    const declared = part === 'querystring' || part === 'headers' ? new Set(Object.keys(((schema ?? {}) as { properties?: object }).properties ?? {})) : undefined
    const read = (name: string) => !idNames.has(name) && (declared === undefined || declared.has(name))
    const ofAnId = (error: SchemaError) => idNames.has(error.instancePath.split('/')[1] ?? '')

    // The path's, the query's and the headers' dictionaries are objects of their own classes: their own entries
    // are the input (the ids apart: a malformed one is the 404 below). Of the headers, only the few declared are
    // read, without walking every header the client sent.
    const inputOf = (data: unknown): unknown => {
      if (part === 'body' || data === null || typeof data !== 'object') return data
      const input: Record<string, unknown> = {}
      if (part === 'headers' && declared !== undefined) {
        for (const name of declared) if (Object.hasOwn(data, name)) input[name] = (data as Record<string, unknown>)[name]
      } else {
        for (const name of Object.keys(data)) if (read(name)) input[name] = (data as Record<string, unknown>)[name]
      }
      return input
    }

    return function check(data: unknown): Outcome {
      const schemaErrors = validate(data) ? undefined : ((validate.errors ?? []) as SchemaError[]).filter((error) => !ofAnId(error))
      const inputProblems = inputViolations(inputOf(data))
      if ((schemaErrors !== undefined && schemaErrors.length > 0) || inputProblems.length > 0) {
        return { error: requestInvalid(context, [...toViolations(schemaErrors ?? []), ...inputProblems]) }
      }
      const missing = ids.length > 0 ? parsePathIds(ids, data as Record<string, unknown>) : undefined
      return missing ? { error: missing } : true
    }
  }
}
