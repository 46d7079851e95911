import { generateKeyPairSync, randomBytes } from 'node:crypto'
import type { ChangeFeed } from '../../db/changes.ts'
import type { Db, KeyRingRow } from '../../db/schema.ts'
import { DomainError, notFound } from '../../lib/errors.ts'
import { SealingKey, type SealedValueSet } from '../../lib/sealing.ts'
import { SigningKey } from '../auth/index.ts'
import { KEY_RING_CHANGE, rootOf, type KeyRing } from './key-ring.ts'
import { insertKey, listKeys, lockKeys, replaceMaterial, retireKey, type KeyPurpose } from './keys.repository.ts'

export interface KeysSettings {
  /** How often every process reads the rings at the least (KEY_RING_REFRESH_MS). */
  refreshMs: number
  /**
   * How long a new key waits before it seals or signs: long enough for every process to have read it (twice the
   * refresh interval where processes share PostgreSQL; nothing for the embedded database, which has one process).
   */
  activationDelayMs: number
  /** The longest a token the ring signs may live (access tokens, widget sessions), in seconds. */
  tokenLifetimeSeconds: number
}

/** A key as `tessera keys list` shows it: never its material. */
export interface KeyView {
  id: string
  purpose: KeyPurpose
  /** `pending` until it activates (it opens and verifies, and is published, already), `active`, then `retired`. */
  status: 'pending' | 'active' | 'retired'
  /** Whether it is the key that seals or signs now (the derivation root always is). */
  current: boolean
  createdAt: string
  activatesAt: string
  retiredAt: string | null
  /** The id of the root key its material is sealed under; null once retired. */
  root: string | null
}

export interface ResealReport {
  /** The sealing key every value was moved to. */
  key: string
  sets: { name: string; moved: number; unopenable: string[] }[]
  /** Values still sealed under another key, by key (values sealed meanwhile under a key not yet replaced everywhere). */
  remaining: Record<string, number>
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * The operations on the key rings (`tessera keys …`): listing, rotating, re-sealing every module's sealed values,
 * retiring an old key when nothing needs it any more, and re-wrapping the rings under a new root key.
 */
export class KeysService {
  private readonly db: Db
  private readonly ring: KeyRing
  private readonly changes: ChangeFeed
  private readonly sealed: readonly SealedValueSet[]
  private readonly settings: KeysSettings

  constructor(deps: { db: Db; ring: KeyRing; changes: ChangeFeed; sealed: readonly SealedValueSet[]; settings: KeysSettings }) {
    this.db = deps.db
    this.ring = deps.ring
    this.changes = deps.changes
    this.sealed = deps.sealed
    this.settings = deps.settings
  }

  async list(): Promise<KeyView[]> {
    return viewsOf(await listKeys(this.db), new Date())
  }

  /** Adds a new key to the sealing ring, the signing ring, or both; it seals or signs once it activates. */
  async rotate(input: { sealing: boolean; signing: boolean }): Promise<KeyView[]> {
    const createdAt = new Date()
    const activatesAt = new Date(createdAt.getTime() + this.settings.activationDelayMs)
    const added: { purpose: KeyPurpose; id: string }[] = []
    await this.db.transaction().execute(async (tx) => {
      for (const purpose of ['sealing', 'signing'] as const) {
        if (!input[purpose]) continue
        for (;;) {
          const { id, material } = purpose === 'sealing' ? newSealingKey() : newSigningKey()
          // Ids are short digests of random keys: a clash is all but impossible, and then another key is made.
          if (await insertKey(tx, { purpose, id, material: this.ring.wrap(purpose, id, material), createdAt, activatesAt })) {
            added.push({ purpose, id })
            break
          }
        }
      }
      await this.changes.announce(tx, KEY_RING_CHANGE)
    })
    await this.ring.refresh()
    const views = viewsOf(await listKeys(this.db), new Date())
    return added.map(({ purpose, id }) => views.find((view) => view.purpose === purpose && view.id === id)!)
  }

  /** How many values of each module are sealed under each sealing key. */
  async census(): Promise<Record<string, Record<string, number>>> {
    const counts: Record<string, Record<string, number>> = {}
    for (const set of this.sealed) {
      for (const [key, count] of Object.entries(await set.census())) (counts[key] ??= {})[set.name] = count
    }
    return counts
  }

  /**
   * Moves every sealed value of every module to the newest sealing key, in batches, each row locked only while its
   * values are sealed anew: writers keep working meanwhile. Idempotent and resumable (values already under the key
   * are left alone). Waits first for the newest key to activate.
   */
  async reseal(options: { batchSize?: number; onWait?: (key: string, until: Date) => void } = {}): Promise<ResealReport> {
    const batchSize = options.batchSize ?? 100
    await this.ring.refresh()
    const newest = this.ring.sealingKeys().at(-1)!
    const wait = newest.activatesAt.getTime() - Date.now()
    if (wait > 0) {
      options.onWait?.(newest.id, newest.activatesAt)
      await sleep(wait + 10)
    }
    const sets: ResealReport['sets'] = []
    for (const set of this.sealed) {
      const report = { name: set.name, moved: 0, unopenable: [] as string[] }
      let cursor: string | null = null
      do {
        const batch = await set.resealBatch(cursor, batchSize)
        report.moved += batch.moved
        report.unopenable.push(...batch.unopenable)
        cursor = batch.cursor
      } while (cursor !== null)
      sets.push(report)
    }
    const remaining: Record<string, number> = {}
    for (const [key, counts] of Object.entries(await this.census())) {
      if (key === newest.id) continue
      remaining[key] = Object.values(counts).reduce((sum, count) => sum + count, 0)
    }
    return { key: newest.id, sets, remaining }
  }

  /**
   * Retires a key that nothing needs any more: a sealing key once no value is sealed under it and no process can
   * still seal with it; a signing key once every token it signed has expired. Its material is erased.
   */
  async retire(id: string): Promise<KeyView> {
    const now = new Date()
    const rows = await listKeys(this.db)
    const row = rows.find((candidate) => candidate.id === id && candidate.purpose !== 'derivation')
    if (!row) throw notFound('key', { id })
    if (row.status === 'retired') throw refused(`Key ${id} is already retired`)
    // The key that took over from it: the first to activate after it.
    const successor = rows.find((candidate) => candidate.purpose === row.purpose && candidate.status === 'active' && candidate.activates_at > row.activates_at)
    if (!successor) throw refused(`Key ${id} is the newest ${row.purpose} key: rotate first (tessera keys rotate --${row.purpose})`)
    if (successor.activates_at > now) {
      throw refused(`Key ${id} is the current ${row.purpose} key until key ${successor.id} activates at ${successor.activates_at.toISOString()}`, { until: successor.activates_at.toISOString() })
    }
    if (row.purpose === 'sealing') {
      // Processes read the ring at least every refreshMs: until then one may still seal with the old key.
      const until = new Date(successor.activates_at.getTime() + this.settings.refreshMs)
      if (until > now) throw refused(`Processes may still seal with key ${id} until ${until.toISOString()}`, { until: until.toISOString() })
      const counts = (await this.census())[id] ?? {}
      const total = Object.values(counts).reduce((sum, count) => sum + count, 0)
      if (total > 0) throw refused(`${total} value(s) are still sealed under key ${id}: run tessera keys reseal first`, { values: counts })
    } else {
      const until = new Date(successor.activates_at.getTime() + this.settings.refreshMs + this.settings.tokenLifetimeSeconds * 1000)
      if (until > now) throw refused(`Tokens signed with key ${id} may be valid until ${until.toISOString()}`, { until: until.toISOString() })
    }
    await this.db.transaction().execute(async (tx) => {
      await retireKey(tx, row.purpose, row.id, now)
      await this.changes.announce(tx, KEY_RING_CHANGE)
    })
    await this.ring.refresh()
    return viewsOf(await listKeys(this.db), new Date()).find((view) => view.purpose === row.purpose && view.id === id)!
  }

  /**
   * Seals every key's material anew under the current root key (SEALING_KEY), when some is under the previous one
   * (SEALING_KEY_PREVIOUS): the step of a change of root key. Idempotent.
   */
  async rewrap(): Promise<{ root: string; rewrapped: number }> {
    let rewrapped = 0
    await this.db.transaction().execute(async (tx) => {
      for (const row of await lockKeys(tx)) {
        if (row.material === null || rootOf(row) === this.ring.root.id) continue
        await replaceMaterial(tx, row.purpose, row.id, this.ring.wrap(row.purpose, row.id, this.ring.unwrap(row)))
        rewrapped++
      }
      if (rewrapped > 0) await this.changes.announce(tx, KEY_RING_CHANGE)
    })
    await this.ring.refresh()
    return { root: this.ring.root.id, rewrapped }
  }
}

function refused(message: string, details?: Record<string, unknown>): DomainError {
  return new DomainError('operation_not_allowed', message, details ? { details } : {})
}

function newSealingKey(): { id: string; material: string } {
  const material = randomBytes(32).toString('base64')
  return { id: new SealingKey(material).id, material }
}

function newSigningKey(): { id: string; material: string } {
  const material = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()
  return { id: new SigningKey(material).kid, material }
}

function viewsOf(rows: readonly KeyRingRow[], now: Date): KeyView[] {
  const current = new Map<string, string>()
  for (const row of rows) if (row.status === 'active' && row.activates_at <= now) current.set(row.purpose, row.id)
  return rows.map((row) => ({
    id: row.id,
    purpose: row.purpose,
    status: row.status === 'retired' ? 'retired' : row.activates_at > now ? 'pending' : 'active',
    current: current.get(row.purpose) === row.id,
    createdAt: row.created_at.toISOString(),
    activatesAt: row.activates_at.toISOString(),
    retiredAt: row.retired_at?.toISOString() ?? null,
    root: rootOf(row),
  }))
}
