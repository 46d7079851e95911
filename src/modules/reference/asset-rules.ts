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

/**
 * When the cooldowns that may cover a user living in `country` end, counted from `since`: distinct, soonest first.
 * The country of residence never changes, but the subdivision may, so a rule naming any subdivision of the country
 * counts too (whether it covers the user is decided when the cooldown ends: `cooldownsEndingAt`).
 */
export function cooldownEnds(country: string, since: Date, rules: readonly CooldownRule[]): Date[] {
  const ends = new Set<number>()
  for (const rule of rules) {
    if (rule.regions.some((region) => region === country || region.startsWith(`${country}-`))) ends.add(since.getTime() + rule.hours * 3_600_000)
  }
  return [...ends].sort((a, b) => a - b).map((time) => new Date(time))
}

/** Cooldowns that ended together: the features they held back, on which assets. */
export interface EndedCooldown {
  rule: 'financial-promotions'
  features: AssetFeature[]
  /** Asset codes, in code order. */
  assets: string[]
}

/**
 * The user's cooldowns that end at `endsAt`, as `activeCooldowns` showed them until then, one entry per rule and set
 * of features held back (a feature the asset does not offer was not held back; an asset left with none is left
 * out), in the order of their features. None when the user's cooldowns were skipped before `endsAt` (they ended then), or when no rule ends at
 * `endsAt` any more (the user's onboarding moved: they ended otherwise).
 */
export function cooldownsEndingAt(
  assets: readonly { code: string; type: AssetType; features: readonly AssetFeature[] }[],
  user: Pick<UserStanding, 'residence' | 'since' | 'cooldownsSkippedAt'>,
  rules: readonly CooldownRule[],
  endsAt: Date,
): EndedCooldown[] {
  const skipped = user.cooldownsSkippedAt
  if (skipped !== null && skipped >= user.since && skipped < endsAt) return []
  const ended = new Map<string, EndedCooldown>()
  for (const rule of rules) {
    if (user.since.getTime() + rule.hours * 3_600_000 !== endsAt.getTime()) continue
    for (const asset of assets) {
      if (!covers(rule, asset, user.residence)) continue
      const features = ASSET_FEATURES.filter((feature) => rule.features.includes(feature) && asset.features.includes(feature))
      if (features.length === 0) continue
      const key = `${rule.rule}:${features.join(',')}`
      const entry = ended.get(key) ?? { rule: rule.rule, features, assets: [] }
      if (!entry.assets.includes(asset.code)) entry.assets.push(asset.code)
      ended.set(key, entry)
    }
  }
  return [...ended.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, entry]) => ({ ...entry, assets: entry.assets.toSorted() }))
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
