import type { Violation } from '../../lib/errors.ts'

/** How a secret is shown (spec §2.12): its first four characters, then four asterisks. */
export function maskSecret(secret: string): string {
  // By code point, so that a character outside the BMP is never cut in half.
  return `${Array.from(secret).slice(0, 4).join('')}****`
}

interface NamedInput {
  name: string
  apiKey?: string | undefined
  sharedSecretKey?: string | undefined
}

/** Integration names are unique within a configuration: every repeat after the first is a violation. */
export function duplicateNameViolations(integrations: readonly NamedInput[]): Violation[] {
  const seen = new Set<string>()
  const violations: Violation[] = []
  integrations.forEach((integration, index) => {
    if (seen.has(integration.name)) violations.push({ property: `integrations[${index}].name`, rule: 'unique' })
    seen.add(integration.name)
  })
  return violations
}

/**
 * An omitted secret keeps the current one of the integration of the same name; an integration the
 * configuration does not have yet has nothing to keep, so it must bring both.
 */
export function missingSecretViolations(integrations: readonly NamedInput[], existingNames: ReadonlySet<string>): Violation[] {
  const violations: Violation[] = []
  integrations.forEach((integration, index) => {
    if (existingNames.has(integration.name)) return
    for (const field of ['apiKey', 'sharedSecretKey'] as const) {
      if (integration[field] === undefined) violations.push({ property: `integrations[${index}].${field}`, rule: 'required' })
    }
  })
  return violations
}
