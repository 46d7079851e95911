/**
 * Runs the whole suite: unit tests beside the code (src/**\/*.test.ts), HTTP tests (test/*.test.ts) on
 * every available engine, and browser tests (test/browser) when Chromium is installed.
 *
 * Under CI=true nothing may be skipped: PostgreSQL (TEST_DATABASE_URL) and Chromium are required.
 */
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

const root = path.resolve(import.meta.dirname, '..')
const chromium = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
const ci = process.env.CI === 'true'

// The whole run is bounded (see below the spawn).
const suiteLimitMs = Number(process.env.TEST_SUITE_TIMEOUT_MS ?? 50 * 60_000)
if (!Number.isInteger(suiteLimitMs) || suiteLimitMs < 1) {
  process.stderr.write(`TEST_SUITE_TIMEOUT_MS must be a positive number of milliseconds (got "${process.env.TEST_SUITE_TIMEOUT_MS}")\n`)
  process.exit(2)
}

const problems: string[] = []
if (ci && !process.env.TEST_DATABASE_URL) problems.push('TEST_DATABASE_URL is not set: the PostgreSQL suite would be skipped')
if (ci && !fs.existsSync(chromium)) problems.push(`Chromium was not found at ${chromium}: the browser suite would be skipped`)
if (problems.length > 0) {
  process.stderr.write(`Refusing to run a partial suite in CI:\n${problems.map((p) => `  - ${p}`).join('\n')}\n`)
  process.exit(1)
}

function collect(dir: string, match: (file: string) => boolean): string[] {
  if (!fs.existsSync(dir)) return []
  return fs
    .readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter(match)
    .map((file) => path.join(dir, file))
    .sort()
}

const filter = process.argv.slice(2)
const browser = fs.existsSync(chromium)
const files = [
  ...collect(path.join(root, 'src'), (f) => f.endsWith('.test.ts')),
  ...collect(path.join(root, 'test'), (f) => f.endsWith('.test.ts') && !f.startsWith('browser')),
  ...(browser ? collect(path.join(root, 'test', 'browser'), (f) => f.endsWith('.test.ts')) : []),
].filter((file) => filter.length === 0 || filter.some((f) => file.includes(f)))

const engines = process.env.TEST_DATABASE_URL ? 'pglite, postgres' : 'pglite (set TEST_DATABASE_URL to add PostgreSQL)'
process.stdout.write(`Engines: ${engines}. Browser tests: ${browser ? 'on' : `off (no Chromium at ${chromium})`}. Files: ${files.length}.\n`)

// A test stuck for ten minutes fails instead of holding CI until its limit. A file that leaves something open
// after its tests (a leak to fix) would keep the run alive, so the whole run is bounded too. Not with
// --test-force-exit: under --test-concurrency it silently drops test results (nodejs/node#64833), and a dropped
// failure would pass.
const child = spawn(process.execPath, ['--test', '--test-reporter=spec', '--test-concurrency=2', '--test-timeout=600000', ...files], {
  cwd: root,
  stdio: 'inherit',
  // Node's compile cache (kept across runs, keyed by each file's contents) spares every test process and every server
  // or command a test starts most of the ~1 s it spends loading Tessera's modules.
  env: { NODE_COMPILE_CACHE: path.join(os.tmpdir(), 'tessera-test-compile-cache'), ...process.env, CHROMIUM_PATH: chromium },
  // Its own process group, so that the test files it runs can be stopped with it.
  detached: true,
})
const stopAll = (signal: NodeJS.Signals) => {
  try {
    process.kill(-child.pid!, signal)
  } catch {
    // Already gone.
  }
}
const watchdog = setTimeout(() => {
  process.stderr.write(`\nThe test run took longer than ${Math.round(suiteLimitMs / 1000)} s (TEST_SUITE_TIMEOUT_MS): something a test opened is still holding a process open. Stopping it.\n`)
  stopAll('SIGKILL')
  process.exit(1)
}, suiteLimitMs)
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => stopAll(signal))
child.on('exit', (code, signal) => {
  clearTimeout(watchdog)
  process.exit(code ?? (signal ? 1 : 0))
})
