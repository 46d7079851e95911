// Helpers for tests that run Tessera as the operator does: the CLI as a child process, on its own data
// directory and, on PostgreSQL, its own database.
import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { createTestDatabase, directUrlOf, type TestDatabase } from './helpers.ts'

export const ROOT = path.resolve(import.meta.dirname, '..')
export const MAIN = path.join(ROOT, 'src', 'main.ts')

export interface Run {
  code: number | null
  stdout: string
  stderr: string
}

/**
 * The environment of a child process: `env`, PATH, the suite's compile cache (NODE_COMPILE_CACHE, set by
 * test/run.ts), and (through the suite's PgBouncer) DATABASE_DIRECT_URL for its DATABASE_URL, as an operator sets
 * both behind a transaction-pooling proxy.
 */
export function processEnv(env: Record<string, string>): Record<string, string> {
  const direct = env.DATABASE_URL && !env.DATABASE_DIRECT_URL ? directUrlOf(env.DATABASE_URL) : undefined
  const cache = process.env.NODE_COMPILE_CACHE
  return { PATH: process.env.PATH ?? '', ...(cache ? { NODE_COMPILE_CACHE: cache } : {}), ...(direct ? { DATABASE_DIRECT_URL: direct } : {}), ...env }
}

/** Runs `tessera <args>` to its end with only the given environment (and PATH). */
export function cli(args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [MAIN, ...args], { cwd: ROOT, env: processEnv(env) })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    child.on('exit', (code) => resolve({ code, stdout, stderr }))
  })
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer()
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo
      server.close(() => resolve(port))
    })
    server.on('error', reject)
  })
}

/** A new, empty database on the test PostgreSQL server (see createTestDatabase), and how to drop it. */
export function scratchDatabase(prefix: string): Promise<TestDatabase> {
  return createTestDatabase(prefix)
}

/** A deployment's environment: its own data directory and, on PostgreSQL, its own database. */
export async function deployment(engine: string, prefix: string): Promise<{ env: Record<string, string>; dataDir: string; cleanup: () => Promise<void> }> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `tessera-${prefix}-`))
  const env: Record<string, string> = { DATA_DIR: dataDir, LOG_LEVEL: 'warn' }
  const database = engine === 'postgres' ? await scratchDatabase(prefix) : null
  if (database) Object.assign(env, { DATABASE_URL: database.url, DATABASE_DIRECT_URL: database.directUrl })
  return {
    env,
    dataDir,
    cleanup: async () => {
      await database?.drop()
      fs.rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

export interface Server {
  child: ChildProcess
  exited: Promise<number | null>
  /** What it printed on stderr when it was up: the banner. */
  banner: string
}

export type Role = 'all' | 'api' | 'worker'

/**
 * Starts `serve --role ROLE` and resolves once its banner is printed: the API listens by then, and a worker runs
 * jobs (its banner names its id, `workerIdOf`).
 */
export function serve(env: Record<string, string>, role: Role = 'all'): Promise<Server> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN, 'serve', '--role', role], { cwd: ROOT, env: processEnv(env) })
    const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)))
    let stderr = ''
    // Generous: several processes may be starting at once on a loaded machine.
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`serve --role ${role} did not start in 60 s: ${stderr}`))
    }, 60_000)
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString()
      if (/(listening on|is running background jobs)[\s\S]*\n\n$/.test(stderr)) {
        clearTimeout(timer)
        resolve({ child, exited, banner: stderr })
      }
    })
    child.stdout.resume()
    void exited.then((code) => {
      clearTimeout(timer)
      reject(new Error(`serve --role ${role} exited with ${code}: ${stderr}`))
    })
  })
}

/** The id a worker process claims jobs under (`jobs.locked_by`), from its banner. */
export function workerIdOf(server: Server): string {
  const id = /worker (\S+) is running background jobs/.exec(server.banner)?.[1]
  if (!id) throw new Error(`no worker id in: ${server.banner}`)
  return id
}
