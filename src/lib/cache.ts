/**
 * A bounded in-process cache of database rows, kept correct by invalidation: writers announce changed
 * keys (see db/changes.ts) and every process evicts them. `load` only stores what it read when no
 * invalidation arrived while it was reading, so a slow read cannot put back a row that just changed.
 * `ttlMs` bounds how long an entry may live even if an announcement was lost.
 */
export class InvalidatedCache<V> {
  private readonly entries = new Map<string, { value: V; expiresAt: number }>()
  private readonly maxEntries: number
  private readonly ttlMs: number
  private readonly now: () => number
  private generation = 0
  /** False while invalidations cannot be trusted to arrive: then every load goes to the source. */
  private trusted: () => boolean

  constructor(options: { maxEntries: number; ttlMs: number; trusted?: () => boolean; now?: () => number }) {
    this.maxEntries = options.maxEntries
    this.ttlMs = options.ttlMs
    this.trusted = options.trusted ?? (() => true)
    this.now = options.now ?? Date.now
  }

  get size(): number {
    return this.entries.size
  }

  get(key: string): V | undefined {
    const entry = this.entries.get(key)
    if (!entry) return undefined
    if (entry.expiresAt <= this.now() || !this.trusted()) {
      this.entries.delete(key)
      return undefined
    }
    return entry.value
  }

  /** The cached value, or the loader's; a loaded `undefined` (nothing found) is not cached. */
  async load(key: string, loader: () => Promise<V | undefined>): Promise<V | undefined> {
    const cached = this.get(key)
    if (cached !== undefined) return cached
    const generation = this.generation
    const value = await loader()
    if (value !== undefined && generation === this.generation && this.trusted()) this.set(key, value)
    return value
  }

  evict(key: string): void {
    this.generation++
    this.entries.delete(key)
  }

  clear(): void {
    this.generation++
    this.entries.clear()
  }

  private set(key: string, value: V): void {
    this.entries.delete(key)
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!)
    this.entries.set(key, { value, expiresAt: this.now() + this.ttlMs })
  }
}
