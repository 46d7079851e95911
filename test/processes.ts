// Helpers for tests that run Tessera as the operator does: the CLI as a child process, on its own data
// directory and, on PostgreSQL, its own database.
import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { TEST_DATABASE_URL } from './helpers.ts'

export const ROOT = path.resolve(import.meta.dirname, '..')
export const MAIN = path.join(ROOT, 'src', 'main.ts')

export interface Run {
  code: number | null
  stdout: string
  stderr: string
}

/** Runs `tessera <args>` to its end with only the given environment (and PATH). */
export function cli(args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [MAIN, ...args], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env } })
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

/** A new, empty database on the test PostgreSQL server, and how to drop it. */
export async function scratchDatabase(prefix: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `${prefix}_${randomBytes(5).toString('hex')}`
  const admin = new pg.Client({ connectionString: TEST_DATABASE_URL })
  await admin.connect()
  await admin.query(`create database ${name}`)
  await admin.end()
  const url = new URL(TEST_DATABASE_URL!)
  url.pathname = `/${name}`
  return {
    url: url.href,
    drop: async () => {
      const client = new pg.Client({ connectionString: TEST_DATABASE_URL })
      await client.connect()
      await client.query(`drop database if exists ${name} with (force)`)
      await client.end()
    },
  }
}

/** A deployment's environment: its own data directory and, on PostgreSQL, its own database. */
export async function deployment(engine: string, prefix: string): Promise<{ env: Record<string, string>; dataDir: string; cleanup: () => Promise<void> }> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `tessera-${prefix}-`))
  const env: Record<string, string> = { DATA_DIR: dataDir, LOG_LEVEL: 'warn' }
  const database = engine === 'postgres' ? await scratchDatabase(prefix) : null
  if (database) env.DATABASE_URL = database.url
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
}

/** Starts `serve` and resolves once its banner is printed. */
export function serve(env: Record<string, string>): Promise<Server> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN, 'serve'], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env } })
    const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)))
    let stderr = ''
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`serve did not start in 30 s: ${stderr}`))
    }, 30_000)
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString()
      if (/listening on[\s\S]*\n\n$/.test(stderr)) {
        clearTimeout(timer)
        resolve({ child, exited })
      }
    })
    child.stdout.resume()
    void exited.then((code) => {
      clearTimeout(timer)
      reject(new Error(`serve exited with ${code}: ${stderr}`))
    })
  })
}
