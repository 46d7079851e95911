import { generateKeyPairSync, randomBytes } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'

/** Raised when another live process owns the data directory. */
export class DataDirBusyError extends Error {
  readonly pid: number
  constructor(dataDir: string, pid: number, purpose: string) {
    super(
      `The data directory ${dataDir} is in use by another Tessera process (pid ${pid}). ` +
        `The embedded database belongs to one process at a time: ${purpose}`,
    )
    this.name = 'DataDirBusyError'
    this.pid = pid
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/**
 * Takes the data directory's lock file, replacing a lock left by a process that no longer runs.
 * Returns the function that releases it.
 */
export function lockDataDir(dataDir: string, purpose: string): () => void {
  fs.mkdirSync(dataDir, { recursive: true })
  const lockPath = path.join(dataDir, 'tessera.pid')
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      fs.writeFileSync(lockPath, String(process.pid), { flag: 'wx' })
      let released = false
      return () => {
        if (released) return
        released = true
        try {
          if (fs.readFileSync(lockPath, 'utf8').trim() === String(process.pid)) fs.unlinkSync(lockPath)
        } catch {
          // Already gone: nothing to release.
        }
      }
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
      const pid = Number.parseInt(fs.readFileSync(lockPath, 'utf8').trim(), 10)
      if (Number.isInteger(pid) && pid !== process.pid && isAlive(pid)) throw new DataDirBusyError(dataDir, pid, purpose)
      fs.rmSync(lockPath, { force: true })
    }
  }
  throw new Error(`Could not lock ${lockPath}`)
}

export interface SandboxSecrets {
  tokenSigningKey: string
  sealingKey: string
}

/**
 * Returns the configured secrets, generating the missing ones. With a data directory they are written
 * once (mode 0600) and read back on every later start, so tokens survive restarts.
 */
export function loadOrCreateSecrets(
  dataDir: string | null,
  configured: { tokenSigningKey: string | null; sealingKey: string | null },
): SandboxSecrets {
  const dir = dataDir === null ? null : path.join(dataDir, 'secrets')
  if (dir) fs.mkdirSync(dir, { recursive: true, mode: 0o700 })

  const persisted = (file: string, generate: () => string): string => {
    if (dir === null) return generate()
    const filePath = path.join(dir, file)
    if (fs.existsSync(filePath)) return fs.readFileSync(filePath, 'utf8').trim()
    const value = generate()
    fs.writeFileSync(filePath, `${value}\n`, { mode: 0o600 })
    return value
  }

  return {
    tokenSigningKey:
      configured.tokenSigningKey ??
      persisted('token-signing-key.pem', () =>
        generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      ),
    sealingKey: configured.sealingKey ?? persisted('sealing.key', () => randomBytes(32).toString('base64')),
  }
}
