import type { Violation } from './errors.ts'

/** At most this many violations are reported; one is enough to fix the request, a few help. */
const MAX_VIOLATIONS = 10

/**
 * How deep objects and arrays may nest in a body. The deepest body of the API (a KYC form's answers) is a
 * handful of levels; anything far deeper is an attack on every recursive reader after the edge
 * (serializers, JSON Patch, the database's JSON parser), not data.
 */
export const MAX_DEPTH = 64

interface Frame {
  value: unknown
  parent: Frame | undefined
  key: string | number | undefined
  depth: number
}

/** `address.lines[0]`, the notation of every violation's property. */
function pathOf(frame: Frame | undefined): string {
  const keys: (string | number)[] = []
  for (let at = frame; at?.key !== undefined; at = at.parent) keys.push(at.key)
  return keys.reverse().reduce<string>((path, key) => (typeof key === 'number' ? `${path}[${key}]` : path ? `${path}.${key}` : key), '')
}

/** Parsed input only (a JSON object or a dictionary): anything else (a stream, a buffer) is not text to read. */
function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object') return false
  const prototype = Object.getPrototypeOf(value) as unknown
  return prototype === null || prototype === Object.prototype
}

function characterProblem(text: string): string | undefined {
  if (text.includes('\u0000')) return 'U+0000'
  if (!text.isWellFormed()) return 'unpaired surrogate'
  return undefined
}

/**
 * What no operation can take, whatever its schema says, anywhere in a parsed input (a body, the query, the path
 * parameters, the headers), each a 400 `request_invalid`:
 * - text the database cannot store (rule `characters`): U+0000, which no PostgreSQL text or JSON value holds, and
 *   unpaired UTF-16 surrogates (`"\ud800"` in JSON), which no UTF-8 text encodes; in keys as in values, rather
 *   than failing in the database or being silently replaced;
 * - objects and arrays nested deeper than `MAX_DEPTH` (rule `maxDepth`).
 * The walk is iterative: a body nested a hundred thousand levels deep is read without recursion.
 */
export function inputViolations(input: unknown): Violation[] {
  const violations: Violation[] = []
  const stack: Frame[] = [{ value: input, parent: undefined, key: undefined, depth: 0 }]
  while (stack.length > 0 && violations.length < MAX_VIOLATIONS) {
    const frame = stack.pop()!
    const { value, depth, key } = frame
    const keyProblem = typeof key === 'string' ? characterProblem(key) : undefined
    if (keyProblem) violations.push({ property: pathOf(frame), rule: 'characters', ruleParams: { disallowed: keyProblem } })
    if (typeof value === 'string') {
      const problem = characterProblem(value)
      if (problem) violations.push({ property: pathOf(frame), rule: 'characters', ruleParams: { disallowed: problem } })
      continue
    }
    const container = Array.isArray(value) || isPlainObject(value)
    if (container && depth >= MAX_DEPTH) {
      violations.push({ property: pathOf(frame), rule: 'maxDepth', ruleParams: { limit: MAX_DEPTH } })
      continue
    }
    if (Array.isArray(value)) {
      for (let index = value.length - 1; index >= 0; index--) stack.push({ value: value[index], parent: frame, key: index, depth: depth + 1 })
    } else if (isPlainObject(value)) {
      const keys = Object.keys(value)
      for (let index = keys.length - 1; index >= 0; index--) {
        stack.push({ value: value[keys[index]!], parent: frame, key: keys[index], depth: depth + 1 })
      }
    }
  }
  return violations.slice(0, MAX_VIOLATIONS)
}
