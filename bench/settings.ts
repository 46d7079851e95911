/** A positive integer setting from the environment, or the fallback when it is unset or blank. */
export function positiveInteger(name: string, fallback: number): number {
  const raw = process.env[name]
  if (raw === undefined || raw.trim() === '') return fallback
  if (!/^\d+$/.test(raw.trim()) || Number(raw) < 1) throw new Error(`${name} must be a positive integer (got "${raw}")`)
  return Number(raw)
}
