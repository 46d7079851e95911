import Type, { type Static } from 'typebox'
import { component } from '../../http/schemas.ts'
import { CAPABILITY_CODES, REQUIRABLE_PROCESSES, TERMS_REQUIREMENT, type RequirableTerms } from './capabilities.rules.ts'

const REQUIREMENTS = [
  'user-must-submit-crypto-risk-assessment-form',
  'user-must-submit-self-categorization-form',
  'user-must-submit-residential-address',
  'user-must-submit-customer-due-diligence',
  'user-must-submit-enhanced-due-diligence',
  'user-must-wait-for-the-email-cooldown-period-to-expire',
  'user-must-submit-full-name',
  'user-must-submit-identity',
  'user-must-submit-identity-via-physical-document',
  'user-must-submit-phone-number',
  'user-must-submit-proof-of-address',
  'user-must-submit-tax-details',
  'user-must-submit-tax-identification-number',
  'user-must-submit-w9-form',
  'user-must-accept-unique-account-number-viban-terms-of-service',
  'user-must-delete-card',
] as const

const RESTRICTIONS = [
  'crypto-risk-assessment-form-not-valid',
  'financial-promotion-cooldown-running',
  'phone-country-not-supported',
  'self-categorization-statement-form-not-valid',
  'temporarily-disabled',
  'user-residential-address-not-valid',
  'user-cannot-receive-funds',
  'user-country-not-supported',
  'user-enhanced-due-diligence-not-valid',
  'user-identity-not-valid',
  'user-proof-of-address-not-valid',
  'user-screening-running',
  'user-state-not-supported',
  'user-status-not-valid',
  'user-type-not-supported',
  'user-w9-form-not-valid',
  'user-unique-card-limit-reached',
] as const

export const CapabilityCodeSchema = component('capability-code', Type.Enum([...CAPABILITY_CODES], { description: 'A capability: something a user may do.' }))

export const CapabilitySchema = component(
  'capability',
  Type.Object({
    code: CapabilityCodeSchema,
    name: Type.String({ description: 'Display name.' }),
    enabled: Type.Boolean({ description: 'False when at least one restriction is active.' }),
    requirements: Type.Array(Type.Enum([...REQUIREMENTS]), { description: 'What the user still has to do before the capability can be used.' }),
    restrictions: Type.Array(Type.Enum([...RESTRICTIONS]), { description: 'Why the capability is disabled.' }),
  }),
)

export const ListCapabilitiesResponse = Type.Object({ capabilities: Type.Array(CapabilitySchema) })
export const GetCapabilityResponse = Type.Object({ capability: CapabilitySchema })
export const CapabilityParams = Type.Object({ capability: CapabilityCodeSchema })

const Process = Type.Enum([...REQUIRABLE_PROCESSES])
/** reference-data/capabilities.json */
export const CapabilitiesFile = Type.Object({
  $comment: Type.Optional(Type.String()),
  capabilities: Type.Array(
    Type.Object(
      {
        code: Type.Enum([...CAPABILITY_CODES]),
        name: Type.String({ minLength: 1 }),
        requires: Type.Array(Process),
        requiresWhenResidentIn: Type.Optional(Type.Record(Type.String({ pattern: '^[A-Z]{2}$' }), Type.Array(Process))),
        termsOfService: Type.Optional(Type.Array(Type.Enum(Object.keys(TERMS_REQUIREMENT) as RequirableTerms[]))),
        userTypes: Type.Optional(Type.Array(Type.Enum(['individual', 'business']), { minItems: 1 })),
        disabled: Type.Optional(Type.Boolean()),
      },
      { additionalProperties: false },
    ),
  ),
})
export type CapabilitiesFile = Static<typeof CapabilitiesFile>
