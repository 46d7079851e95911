import BigNumber from 'bignumber.js'

/**
 * When the travel rule asks for the other party of a crypto movement: pure, no I/O. A movement whose value in US
 * dollars (at the mid, when it is screened) is at or above the threshold of its asset, and whose other party is not
 * declared, needs a request for information answered before it goes on. A party is declared when the address is one
 * of the user's own crypto external accounts with a completed verification (declared or verified level).
 */
export interface TravelRuleRules {
  /** The threshold of every asset not listed, in US dollars. */
  default: { thresholdUsd: string }
  /** Per asset overrides, in US dollars. */
  assets: Record<string, { thresholdUsd: string }>
  /**
   * Below this value (US dollars) a self-declaration is enough to prove that the user controls their own wallet;
   * at or above it a signed message is asked for (the widget's `deminimis`).
   */
  selfDeclarationMaximumUsd: string
}

/** FATF Recommendation 16's threshold: what a deployment gets unless its reference data says otherwise. */
export const DEFAULT_TRAVEL_RULE: TravelRuleRules = { default: { thresholdUsd: '1000' }, assets: {}, selfDeclarationMaximumUsd: '1000' }

export function thresholdUsd(rules: TravelRuleRules, asset: string): string {
  return (Object.hasOwn(rules.assets, asset) ? rules.assets[asset]! : rules.default).thresholdUsd
}

export interface Screening {
  asset: string
  /** What the movement is worth in US dollars; null when no price is known (then it is screened as above any threshold). */
  valueUsd: string | null
  /** Whether the other party is declared (see above). */
  counterpartyDeclared: boolean
}

/** Whether the movement needs its other party described before it goes on. */
export function needsTravelRule(rules: TravelRuleRules, screening: Screening): boolean {
  if (screening.counterpartyDeclared) return false
  // An asset without a price cannot be shown to be below the threshold.
  if (screening.valueUsd === null) return true
  return new BigNumber(screening.valueUsd).isGreaterThanOrEqualTo(thresholdUsd(rules, screening.asset))
}

/** Whether a self-declaration is proof enough that the user controls the wallet, for a movement of this value. */
export function selfDeclarationSuffices(rules: TravelRuleRules, valueUsd: string | null): boolean {
  return valueUsd !== null && new BigNumber(valueUsd).isLessThan(rules.selfDeclarationMaximumUsd)
}
