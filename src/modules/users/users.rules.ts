import { DomainError } from '../../lib/errors.ts'

export const MINIMUM_AGE_YEARS = 18
export const MAXIMUM_AGE_YEARS = 100

/** `YYYY-MM-DD` of the day `years` before `now` (UTC), clamping 29 February to the 28th. */
function yearsBefore(now: Date, years: number): string {
  const year = now.getUTCFullYear() - years
  const month = now.getUTCMonth()
  const lastDay = new Date(Date.UTC(year, month + 1, 0)).getUTCDate()
  const day = Math.min(now.getUTCDate(), lastDay)
  return `${String(year).padStart(4, '0')}-${String(month + 1).padStart(2, '0')}-${String(day).padStart(2, '0')}`
}

/** The user must be an adult and plausibly alive: born 18 to 100 years ago. */
export function checkBirthdate(birthdate: string, now: Date): DomainError | null {
  if (birthdate > yearsBefore(now, MINIMUM_AGE_YEARS)) {
    return new DomainError('date_invalid', `The date must be older than or equal to ${MINIMUM_AGE_YEARS} years ago`, {
      details: {
        context: 'body',
        property: 'birthdate',
        rule: 'difference-greater-than-or-equal-to-threshold',
        threshold: { limit: MINIMUM_AGE_YEARS, unit: 'years' },
      },
    })
  }
  if (birthdate < yearsBefore(now, MAXIMUM_AGE_YEARS)) {
    return new DomainError('date_invalid', `The date must be newer than or equal to ${MAXIMUM_AGE_YEARS} years from now`, {
      details: {
        context: 'body',
        property: 'birthdate',
        rule: 'difference-less-than-or-equal-to-threshold',
        threshold: { limit: MAXIMUM_AGE_YEARS, unit: 'years' },
      },
    })
  }
  return null
}

export function checkPastTimestamp(property: string, value: string, now: Date): DomainError | null {
  if (Date.parse(value) < now.getTime()) return null
  return new DomainError('date_invalid', 'The date must be in the past', {
    details: {
      context: 'body',
      property,
      rule: 'difference-greater-than-threshold',
      threshold: { limit: 0 },
    },
  })
}
