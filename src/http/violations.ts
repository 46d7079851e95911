import type { Violation } from './errors.ts'

/** The parts of an Ajv error this module reads. */
export interface SchemaError {
  keyword: string
  instancePath: string
  schemaPath: string
  params: Record<string, unknown>
}

const UNION_KEYWORDS = new Set(['oneOf', 'anyOf'])

/**
 * When a value matches no branch of a union, the validator reports every branch's failures. The client
 * meant one branch: keep the failures of the branch that came closest, recursively. A branch whose literal
 * (`const`: a discriminator such as `flow`) the value matched is closer than any branch whose literal it missed,
 * whatever else fails in it; among those, the one with the fewest failures.
 */
export function closestBranchErrors(errors: readonly SchemaError[]): SchemaError[] {
  const union = errors.find((e) => UNION_KEYWORDS.has(e.keyword))
  if (!union) return [...errors]
  const unionPath = union.schemaPath.slice(0, -union.keyword.length - 1)
  const prefix = `${unionPath}/${union.keyword}/`
  const others = errors.filter((error) => error !== union)
  const outside = others.filter((error) => !error.schemaPath.startsWith(prefix))
  const branches = Map.groupBy(others.filter((error) => error.schemaPath.startsWith(prefix)), (error) => error.schemaPath.slice(prefix.length).split('/')[0]!)
  if (branches.size === 0) return [...outside, union]
  const distance = (branch: SchemaError[]) => (branch.some((error) => error.keyword === 'const') ? 1_000_000 : 0) + branch.length
  const closest = [...branches.values()].reduce((best, next) => (distance(next) < distance(best) ? next : best))
  return closestBranchErrors([...outside, ...closest])
}

/** `/address/lines/0` → `address.lines[0]` */
function propertyPath(instancePath: string, child?: unknown): string {
  const segments = instancePath.split('/').slice(1).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
  if (typeof child === 'string') segments.push(child)
  return segments.reduce((path, segment) => (/^\d+$/.test(segment) ? `${path}[${segment}]` : path ? `${path}.${segment}` : segment), '')
}

const PARAM_NAMES: Record<string, string[]> = {
  type: ['type'],
  enum: ['allowedValues'],
  const: ['allowedValue'],
  format: ['format'],
  pattern: ['pattern'],
  minLength: ['limit'],
  maxLength: ['limit'],
  minimum: ['limit', 'comparison'],
  maximum: ['limit', 'comparison'],
  exclusiveMinimum: ['limit', 'comparison'],
  exclusiveMaximum: ['limit', 'comparison'],
  minItems: ['limit'],
  maxItems: ['limit'],
  minProperties: ['limit'],
  maxProperties: ['limit'],
  multipleOf: ['multipleOf'],
  uniqueItems: ['i', 'j'],
}

export function toViolations(errors: readonly SchemaError[]): Violation[] {
  const seen = new Set<string>()
  const violations: Violation[] = []
  for (const error of closestBranchErrors(errors)) {
    let property: string
    let ruleParams: Record<string, unknown> | undefined
    if (error.keyword === 'required') {
      property = propertyPath(error.instancePath, error.params.missingProperty)
    } else if (error.keyword === 'additionalProperties') {
      property = propertyPath(error.instancePath, error.params.additionalProperty)
    } else {
      property = propertyPath(error.instancePath)
      const names = PARAM_NAMES[error.keyword]
      if (names) ruleParams = Object.fromEntries(names.filter((n) => error.params[n] !== undefined).map((n) => [n, error.params[n]]))
    }
    const key = `${property}\u0000${error.keyword}`
    if (seen.has(key)) continue
    seen.add(key)
    violations.push(ruleParams && Object.keys(ruleParams).length > 0 ? { property, rule: error.keyword, ruleParams } : { property, rule: error.keyword })
  }
  return violations
}
