/**
 * Rules that narrow what a user may do with an asset: restrictions by where the user lives, and cooldowns
 * (periods after onboarding during which some features are unavailable, e.g. the UK's 24-hour cooling-off
 * for first crypto purchases). Pure: the service supplies the user and the clock.
 */
export const ASSET_FEATURES = ['buy', 'sell', 'transfer', 'withdraw', 'deposit'] as const
export type AssetFeature = (typeof ASSET_FEATURES)[number]
export type AssetType = 'fiat' | 'crypto'

interface Scope {
  /** ISO 3166-1 countries (`GB`) or ISO 3166-2 subdivisions (`US-NY`) of residence. */
  regions: string[]
  /** Assets the rule covers, by type and/or code; both absent means every asset. */
  assetTypes?: AssetType[]
  assets?: string[]
  features: AssetFeature[]
}
export type RestrictionRule = Scope & { description: string }
export type CooldownRule = Scope & { rule: 'financial-promotions'; description: string; hours: number }

export interface Residence {
  country: string
  subdivision?: string
}

/** What the rules need to know about the user an operation acts for. */
export interface UserStanding {
  residence: Residence | null
  /** When the user was onboarded: cooldowns run from then. */
  since: Date
  /** When the sandbox test helper last skipped the user's cooldowns. */
  cooldownsSkippedAt: Date | null
  /** The capabilities not restricted for the user (see the capabilities module); null when not known. */
  enabledCapabilities: ReadonlySet<string> | null
}

/** The capability each feature of an asset stands on, by asset type. */
const FEATURE_CAPABILITY: Record<AssetType, Record<AssetFeature, string>> = {
  crypto: { buy: 'trades', sell: 'trades', transfer: 'sends', deposit: 'crypto-deposits', withdraw: 'crypto-withdrawals' },
  fiat: { buy: 'trades', sell: 'trades', transfer: 'sends', deposit: 'bank-deposits', withdraw: 'bank-withdrawals' },
}

/** The features whose capability is restricted for the user: nothing they submit would make them available. */
export function featuresWithoutCapability(asset: { type: AssetType; features: readonly AssetFeature[] }, enabled: ReadonlySet<string>): AssetFeature[] {
  return asset.features.filter((feature) => !enabled.has(FEATURE_CAPABILITY[asset.type][feature]))
}

export interface Cooldown {
  rule: 'financial-promotions'
  features: AssetFeature[]
  endsAt: string
}

function livesIn(regions: readonly string[], residence: Residence): boolean {
  return regions.includes(residence.country) || (residence.subdivision !== undefined && regions.includes(residence.subdivision))
}

function covers(scope: Scope, asset: { code: string; type: AssetType }, residence: Residence | null): boolean {
  if (residence === null || !livesIn(scope.regions, residence)) return false
  if (scope.assetTypes === undefined && scope.assets === undefined) return true
  return (scope.assetTypes?.includes(asset.type) ?? false) || (scope.assets?.includes(asset.code) ?? false)
}

/** Cooldowns running now for the user on the asset. A skip ends every cooldown that began before it. */
export function activeCooldowns(
  asset: { code: string; type: AssetType },
  user: Pick<UserStanding, 'residence' | 'since' | 'cooldownsSkippedAt'>,
  rules: readonly CooldownRule[], now: Date): Cooldown[] {
  if (user.cooldownsSkippedAt !== null && user.cooldownsSkippedAt >= user.since) return []
  return rules
    .filter((rule) => covers(rule, asset, user.residence))
    .map((rule) => ({ rule: rule.rule, features: [...rule.features], endsAt: new Date(user.since.getTime() + rule.hours * 3_600_000) }))
    .filter((cooldown) => cooldown.endsAt > now)
    .map((cooldown) => ({ ...cooldown, endsAt: cooldown.endsAt.toISOString() }))
}

/**
 * Whether any cooldown could still run for the user (one of the rules covers where they live and its hours have
 * not passed since they were onboarded): when none can, their cooldown skip does not matter and need not be read.
 */
export function mayCoolDown(user: Pick<UserStanding, 'residence' | 'since'>, rules: readonly CooldownRule[], now: Date): boolean {
  const residence = user.residence
  if (residence === null) return false
  return rules.some((rule) => livesIn(rule.regions, residence) && user.since.getTime() + rule.hours * 3_600_000 > now.getTime())
}

/** The asset's features as the user may use them: without those restricted where they live or cooling down. */
export function featuresFor(
  asset: { code: string; type: AssetType; features: readonly AssetFeature[] },
  residence: Residence | null,
  restrictions: readonly RestrictionRule[],
  cooldowns: readonly Cooldown[],
  enabledCapabilities: ReadonlySet<string> | null = null,
): AssetFeature[] {
  const removed = new Set<AssetFeature>(enabledCapabilities === null ? [] : featuresWithoutCapability(asset, enabledCapabilities))
  for (const rule of restrictions) if (covers(rule, asset, residence)) for (const feature of rule.features) removed.add(feature)
  for (const cooldown of cooldowns) for (const feature of cooldown.features) removed.add(feature)
  return asset.features.filter((feature) => !removed.has(feature))
}
