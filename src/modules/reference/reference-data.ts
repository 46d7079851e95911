import fs from 'node:fs'
import path from 'node:path'
import { Ajv } from 'ajv'
import type { TSchema } from 'typebox'
import type { RouteAuth } from '../../http/principal.ts'

/** The reference data shipped with Tessera; an operator's directory may replace any of its files. */
export const SHIPPED_REFERENCE_DATA = path.resolve(import.meta.dirname, '../../../reference-data')

export class ReferenceDataError extends Error {}

/**
 * Reads one reference-data file — the operator's when their directory has it, else the shipped one — and
 * checks it against its schema, so that a mistake stops the start with the file and the problem named.
 */
export function loadReferenceData<T>(file: string, schema: TSchema, operatorDir: string | null): T {
  const operatorFile = operatorDir === null ? null : path.join(operatorDir, file)
  const chosen = operatorFile !== null && fs.existsSync(operatorFile) ? operatorFile : path.join(SHIPPED_REFERENCE_DATA, file)
  let data: unknown
  try {
    data = JSON.parse(fs.readFileSync(chosen, 'utf8'))
  } catch (error) {
    throw new ReferenceDataError(`Reference data ${chosen} cannot be read: ${error instanceof Error ? error.message : String(error)}`)
  }
  const validate = new Ajv({ allErrors: true, strict: false }).compile(schema)
  if (!validate(data)) {
    const problems = (validate.errors ?? []).slice(0, 10).map((e) => `  - ${e.instancePath || '/'} ${e.message ?? ''}`)
    throw new ReferenceDataError(`Reference data ${chosen} is invalid:\n${problems.join('\n')}`)
  }
  return data as T
}

/** Reference data is open to every token, whoever it acts for: the reference lists no scope for it. */
export const REFERENCE_DATA_AUTH: RouteAuth = { scopes: [], subjects: ['client', 'user:business', 'user:individual'] }
