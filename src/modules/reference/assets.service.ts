import { createHash } from 'node:crypto'
import BigNumber from 'bignumber.js'
import type { Db, Executor, JobRow, Tx } from '../../db/schema.ts'
import type { Principal } from '../../http/principal.ts'
import { enqueue, JobDeferral, type JobHandlers } from '../../jobs/queue.ts'
import { notFound } from '../../lib/errors.ts'
import { hasEventAt, recordEvents } from '../events/index.ts'
import { activeCooldowns, cooldownEnds, cooldownsEndingAt, featuresFor, mayCoolDown, type Residence, type UserStanding } from './asset-rules.ts'
import * as repository from './assets.repository.ts'
import type { Asset, AssetDefinition, AssetSort, AssetsFile } from './assets.schemas.ts'
import { relativeChange, INTERVAL_STEPS, type HistoryInterval } from './rates.ts'
import type { RatesService } from './rates.service.ts'
import { ReferenceDataError } from './reference-data.ts'

/** Fiat currencies rates are given in by default, besides every listed crypto asset. */
const DEFAULT_FIAT_DENOMINATIONS = ['USD', 'EUR', 'GBP']

/** The assets of reference-data/assets.json, checked once at start. */
export class AssetCatalogue {
  readonly file: AssetsFile
  private readonly byCode: ReadonlyMap<string, AssetDefinition>

  constructor(file: AssetsFile) {
    const problems: string[] = []
    const byCode = new Map<string, AssetDefinition>()
    for (const asset of file.assets) {
      if (byCode.has(asset.code)) problems.push(`${asset.code}: defined twice`)
      byCode.set(asset.code, asset)
    }
    if (!byCode.has('USD')) problems.push('USD: missing (every price is quoted through it)')
    for (const rule of [...file.restrictions, ...file.cooldowns]) {
      for (const code of rule.assets ?? []) if (!byCode.has(code)) problems.push(`a rule names ${code}, which is not in the catalogue`)
    }
    if (problems.length > 0) throw new ReferenceDataError(`Invalid assets:\n${problems.map((p) => `  - ${p}`).join('\n')}`)
    this.file = file
    this.byCode = byCode
  }

  find(code: string): AssetDefinition | undefined {
    return this.byCode.get(code)
  }

  all(): readonly AssetDefinition[] {
    return this.file.assets
  }

  fiatCodes(): string[] {
    return this.file.assets.filter((asset) => asset.type === 'fiat').map((asset) => asset.code)
  }

  defaultDenominations(): string[] {
    const crypto = this.file.assets.filter((asset) => asset.type === 'crypto' && !asset.delisted).map((asset) => asset.code)
    return [...DEFAULT_FIAT_DENOMINATIONS.filter((code) => this.byCode.has(code)), ...crypto]
  }
}

/** What the assets need to know about the user a request acts for; the users module provides it. */
export interface UserDirectory {
  /** Where the acting user lives and since when they are a user; null when unknown. */
  standing(principal: Principal): Promise<{ residence: Residence | null; since: Date } | null>
  /**
   * The same of an active user, locked in the caller's transaction (their deletion waits for it); null when there is
   * no such active user.
   */
  lockStanding(tx: Tx, organizationId: string, userId: string): Promise<{ residence: Residence | null; since: Date } | null>
}

type DirectoryUser = { createdAt: string; address?: { country: string; subdivision?: string } }

function standingOf(user: DirectoryUser): { residence: Residence | null; since: Date } {
  const country = user.address?.country
  return {
    residence: country ? { country, ...(user.address?.subdivision ? { subdivision: user.address.subdivision } : {}) } : null,
    since: new Date(user.createdAt),
  }
}

/** Adapts anything that returns users as the API shows them (the users service) to a user directory. */
export function userDirectoryOf(users: {
  getMe(principal: Principal): Promise<DirectoryUser>
  lockActive(tx: Tx, organizationId: string, userId: string): Promise<DirectoryUser | null>
}): UserDirectory {
  return {
    standing: async (principal) => standingOf(await users.getMe(principal)),
    async lockStanding(tx, organizationId, userId) {
      const user = await users.lockActive(tx, organizationId, userId)
      return user ? standingOf(user) : null
    },
  }
}

/** Without a user directory, nothing is narrowed: every user sees the catalogue's features. */
export const NO_USER_DIRECTORY: UserDirectory = { standing: async () => null, lockStanding: async () => null }

/** What clients hear about assets (webhook event types of the reference). */
export const ASSET_EVENTS = {
  cooldownEnded: 'core.assets.cooldown-ended',
} as const

/** The job that announces the end of a user's cooldowns, due when they end (payload `{userId, endsAt}`). */
export const COOLDOWN_END_JOB = 'assets.cooldown-end'

export interface AssetsServiceDeps {
  catalogue: AssetCatalogue
  rates: RatesService
  db: Db
  /** Base URL of this deployment: logos are served from it. */
  publicUrl: string
  users?: UserDirectory
  /** The capabilities not restricted for the acting user: a feature whose capability is restricted is left out. */
  capabilities?: { enabledFor(principal: Principal): Promise<ReadonlySet<string>> }
  now?: () => Date
}

/** A colour and a short text per code, so that every asset has a recognisable badge without an outside source. */
export function logoSvg(asset: { code: string; symbol?: string }): string {
  const digest = createHash('sha256').update(asset.code).digest()
  const hue = digest.readUInt16BE(0) % 360
  const label = asset.symbol && [...asset.symbol].length <= 2 ? asset.symbol : asset.code.slice(0, 4)
  const size = [...label].length <= 2 ? 28 : [...label].length === 3 ? 20 : 16
  const text = label.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
  return (
    '<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64" viewBox="0 0 64 64" role="img">' +
    `<title>${asset.code.replace(/[<>&]/g, '')}</title>` +
    `<circle cx="32" cy="32" r="32" fill="hsl(${hue} 55% 42%)"/>` +
    `<text x="32" y="32" dy="0.35em" text-anchor="middle" font-family="Helvetica, Arial, sans-serif" font-weight="700" font-size="${size}" fill="#fff">${text}</text>` +
    '</svg>'
  )
}

/** The asset catalogue as a caller sees it: with logos served here, and features narrowed for the acting user. */
export class AssetsService {
  private readonly catalogue: AssetCatalogue
  private readonly rates: RatesService
  private readonly db: Db
  private readonly publicUrl: string
  private readonly users: UserDirectory
  private readonly capabilities: AssetsServiceDeps['capabilities'] | null
  private readonly now: () => Date
  /**
   * `getBody`'s bodies for a client acting for no user, by code, as UTF-8 bytes (the catalogue is fixed for the
   * process's life).
   */
  private readonly clientBodies = new Map<string, Buffer>()

  constructor(deps: AssetsServiceDeps) {
    this.catalogue = deps.catalogue
    this.rates = deps.rates
    this.db = deps.db
    this.publicUrl = deps.publicUrl
    this.users = deps.users ?? NO_USER_DIRECTORY
    this.capabilities = deps.capabilities ?? null
    this.now = deps.now ?? (() => new Date())
  }

  logoUrl(code: string): string {
    return `${this.publicUrl}/core/assets/${encodeURIComponent(code)}/logo.svg`
  }

  private async standing(principal: Principal, enabled?: ReadonlySet<string>): Promise<UserStanding | null> {
    if (principal.userId === null) return null
    const user = await this.users.standing(principal)
    if (!user) return null
    const [skippedAt, enabledCapabilities] = await Promise.all([
      mayCoolDown(user, this.catalogue.file.cooldowns, this.now()) ? repository.findCooldownSkip(this.db, principal.organizationId, principal.userId) : null,
      enabled ?? (this.capabilities ? this.capabilities.enabledFor(principal) : null),
    ])
    return { ...user, cooldownsSkippedAt: skippedAt ?? null, enabledCapabilities }
  }

  private present(definition: AssetDefinition, user: UserStanding | null, now: Date): Asset {
    const { code, name, type, symbol, decimals, delisted } = definition
    const cooldowns = user === null ? [] : activeCooldowns(definition, user, this.catalogue.file.cooldowns, now)
    // A refused residence restricts every capability (user-country-not-supported), so it leaves no feature.
    const features =
      user === null ? [...definition.features] : featuresFor(definition, user.residence, this.catalogue.file.restrictions, cooldowns, user.enabledCapabilities)
    return { code, name, type, ...(symbol ? { symbol } : {}), decimals, delisted, logo: this.logoUrl(code), features, cooldowns }
  }

  async list(principal: Principal, options: { types?: readonly string[]; sort?: AssetSort } = {}): Promise<Asset[]> {
    const now = this.now()
    const user = await this.standing(principal)
    const chosen = this.catalogue.all().filter((asset) => options.types === undefined || options.types.includes(asset.type))
    const sorted = await this.sort(chosen, options.sort ?? 'code:asc', now)
    return sorted.map((definition) => this.present(definition, user, now))
  }

  /**
   * The assets of the codes found, by code; unknown codes are left out. `enabledCapabilities`, when the caller
   * has just read them (`CapabilitiesService.require`), saves reading them again.
   */
  async getMany(principal: Principal, codes: readonly string[], enabledCapabilities?: ReadonlySet<string>): Promise<Record<string, Asset>> {
    const now = this.now()
    const user = await this.standing(principal, enabledCapabilities)
    const assets: Record<string, Asset> = {}
    for (const code of codes) {
      const definition = this.catalogue.find(code)
      if (definition) assets[code] = this.present(definition, user, now)
    }
    return assets
  }

  async get(principal: Principal, code: string): Promise<Asset> {
    const definition = this.catalogue.find(code)
    if (!definition) throw notFound('asset')
    return this.present(definition, await this.standing(principal), this.now())
  }

  /**
   * `{"asset": …}` ready to send. A client acting for no user sees the catalogue's asset as it is (no residence, no
   * cooldown, no capability): that body never changes, so it is serialized once per code; a user's is made each time.
   */
  async getBody(principal: Principal, code: string): Promise<string | Buffer> {
    if (principal.userId !== null) return JSON.stringify({ asset: await this.get(principal, code) })
    let body = this.clientBodies.get(code)
    if (body === undefined) {
      const definition = this.catalogue.find(code)
      if (!definition) throw notFound('asset')
      body = Buffer.from(JSON.stringify({ asset: this.present(definition, null, this.now()) }))
      this.clientBodies.set(code, body)
    }
    return body
  }

  logo(code: string): string {
    const definition = this.catalogue.find(code)
    if (!definition) throw notFound('asset')
    return logoSvg(definition)
  }

  /**
   * For a new user, in the transaction that creates them (their cooldowns run from then): one job for each moment a
   * cooldown that may cover them ends, due then. Whether one does cover them is decided when it ends.
   */
  async scheduleCooldownEnds(tx: Executor, user: { organizationId: string; id: string; residence: Residence | null }, since: Date): Promise<void> {
    if (user.residence === null) return
    for (const endsAt of cooldownEnds(user.residence.country, since, this.catalogue.file.cooldowns)) {
      await enqueue(tx, { type: COOLDOWN_END_JOB, organizationId: user.organizationId, payload: { userId: user.id, endsAt: endsAt.toISOString() }, runAt: endsAt })
    }
  }

  registerJobs(jobs: JobHandlers): void {
    jobs.register(COOLDOWN_END_JOB, (job) => this.announceCooldownEnd(job))
  }

  /**
   * Records `core.assets.cooldown-ended` for the cooldowns of the job's user that end at its `endsAt` (one event per
   * set of features held back), in one transaction under the user's lock; nothing for a user deleted meanwhile, whose
   * cooldowns were skipped before they ended, or who no longer lives where a rule applies. A second run finds the
   * event recorded and records nothing; a run before `endsAt` waits for it.
   */
  private async announceCooldownEnd(job: JobRow): Promise<void> {
    const organizationId = job.organization_id!
    const { userId, endsAt: endsAtText } = job.payload as { userId: string; endsAt: string }
    const endsAt = new Date(endsAtText)
    if (endsAt.getTime() > this.now().getTime()) throw new JobDeferral(endsAt)
    const subject = { type: 'user', id: userId }
    await this.db.transaction().execute(async (tx) => {
      const user = await this.users.lockStanding(tx, organizationId, userId)
      if (!user) return
      const skippedAt = await repository.findCooldownSkip(tx, organizationId, userId)
      const ended = cooldownsEndingAt(this.catalogue.all(), { ...user, cooldownsSkippedAt: skippedAt ?? null }, this.catalogue.file.cooldowns, endsAt)
      if (ended.length === 0 || (await hasEventAt(tx, organizationId, subject, ASSET_EVENTS.cooldownEnded, endsAt))) return
      await recordEvents(
        tx,
        ended.map(({ rule, features, assets }) => ({
          organizationId,
          type: ASSET_EVENTS.cooldownEnded,
          subject,
          userId,
          data: { userId, assets, cooldown: { rule, features, endsAt: endsAt.toISOString() } },
          occurredAt: endsAt,
        })),
      )
    })
  }

  /** Sandbox test helper: ends the acting user's cooldowns now. */
  async skipCooldowns(principal: Principal): Promise<void> {
    if (principal.userId === null) throw notFound('user')
    await repository.upsertCooldownSkip(this.db, principal.organizationId, principal.userId, this.now())
  }

  /** Orders by the sort; price sorts put assets without a price last, and ties go by code. */
  private async sort(assets: readonly AssetDefinition[], sort: AssetSort, now: Date): Promise<AssetDefinition[]> {
    const [field, order, window] = sort.split(':') as [string, 'asc' | 'desc', HistoryInterval | undefined]
    const direction = order === 'asc' ? 1 : -1
    const byCode = (a: AssetDefinition, b: AssetDefinition) => (a.code < b.code ? -1 : a.code > b.code ? 1 : 0)
    if (field === 'code') return [...assets].sort((a, b) => direction * byCode(a, b))
    if (field === 'name') return [...assets].sort((a, b) => direction * a.name.localeCompare(b.name, 'en') || byCode(a, b))

    const keys = await Promise.all(
      assets.map(async (asset) => {
        if (field === 'market-cap') return this.rates.marketCapUsd(asset.code, now)
        const current = await this.rates.usdQuote(asset.code, now)
        if (field === 'price' || current === null) return current?.mid ?? null
        const then = await this.rates.usdQuote(asset.code, new Date(now.getTime() - INTERVAL_STEPS[window!].windowMs))
        return then === null ? null : relativeChange(then.mid, current.mid).toFixed()
      }),
    )
    const keyed = assets.map((asset, i) => ({ asset, key: keys[i] ?? null }))
    keyed.sort((a, b) => {
      if (a.key === null || b.key === null) return a.key === b.key ? byCode(a.asset, b.asset) : a.key === null ? 1 : -1
      return direction * compareDecimals(a.key, b.key) || byCode(a.asset, b.asset)
    })
    return keyed.map(({ asset }) => asset)
  }
}

function compareDecimals(a: string, b: string): number {
  return new BigNumber(a).comparedTo(b) ?? 0
}
