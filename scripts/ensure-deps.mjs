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
  const pinned = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).dependencies?.node
  // The machine's Node.js only installs the pinned one; npm would warn about every package that needs a newer
  // Node.js (pages of EBADENGINE lines) although none of them will run on this one. Said once, here, instead.
  process.stderr.write(
    `Installing dependencies (npm ci), Node.js ${pinned} among them: Tessera runs on that pinned version, ` +
      `not on this machine's ${process.version}, so npm's warnings are not shown (errors are).\n`,
  )
  const npm = process.env.npm_execpath ? [process.execPath, [process.env.npm_execpath]] : ['npm', []]
  const result = spawnSync(npm[0], [...npm[1], 'ci', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: root, stdio: 'inherit' })
  if (result.status !== 0) process.exit(result.status ?? 1)
}
