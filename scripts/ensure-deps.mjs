// Runs before `npm start` and `npm test` with whatever Node.js the machine has (often older than the
// pinned one): installs the locked dependencies, including the pinned Node.js, when they are missing
// or older than package-lock.json, so that a fresh clone needs one command.
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import process from 'node:process'

const root = path.resolve(import.meta.dirname, '..')
const lock = path.join(root, 'package-lock.json')
const installed = path.join(root, 'node_modules', '.package-lock.json')
const pinnedNode = path.join(root, 'node_modules', '.bin', 'node')

const stale = !fs.existsSync(installed) || !fs.existsSync(pinnedNode) || fs.statSync(installed).mtimeMs < fs.statSync(lock).mtimeMs
if (stale) {
  process.stderr.write('Installing dependencies (npm ci)…\n')
  const npm = process.env.npm_execpath ? [process.execPath, [process.env.npm_execpath]] : ['npm', []]
  const result = spawnSync(npm[0], [...npm[1], 'ci', '--no-audit', '--no-fund'], { cwd: root, stdio: 'inherit' })
  if (result.status !== 0) process.exit(result.status ?? 1)
}
