import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { describe, test } from 'node:test'
import { ESLint } from 'eslint'

const ROOT = path.resolve(import.meta.dirname, '..')
const RULE = 'tessera/module-boundaries'

/** The project's own ESLint configuration, run on `code` as if it were the file at `file`. */
const eslint = new ESLint({ cwd: ROOT })
async function boundaryProblems(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: path.join(ROOT, file) })
  assert.ok(result)
  const fatal = result.messages.filter((message) => message.fatal)
  assert.deepEqual(fatal, [], 'the snippet parses')
  return result.messages.filter((message) => message.ruleId === RULE).map((message) => message.message)
}

describe('module boundaries (eslint)', () => {
  test('another module is imported through its entry file only', async () => {
    const file = 'src/modules/deposit-methods/deposit-methods.service.ts'
    assert.deepEqual(await boundaryProblems(file, "import { AccountsService } from '../accounts/accounts.service.ts'\nexport const used = AccountsService\n"), [
      "Import module 'accounts' through its entry file (../accounts/index.ts), not its internals",
    ])
    assert.equal((await boundaryProblems(file, "import type { Account } from '../accounts/accounts.schemas.ts'\nexport type Used = Account\n")).length, 1, 'type imports too')
    assert.equal((await boundaryProblems(file, "export const load = () => import('../accounts/accounts.service.ts')\n")).length, 1, 'dynamic imports too')
    assert.equal((await boundaryProblems(file, "export { AccountsService } from '../accounts/accounts.service.ts'\n")).length, 1, 're-exports too')
    assert.deepEqual(await boundaryProblems(file, "import { AccountsService } from '../accounts/index.ts'\nexport const used = AccountsService\n"), [])
    assert.deepEqual(await boundaryProblems(file, "import { methodNetwork } from './destinations.ts'\nexport const used = methodNetwork\n"), [], 'within the module')
  })

  test('outside src/modules, modules are reached through their entry files too', async () => {
    assert.equal((await boundaryProblems('src/flows/trade.flow.ts', "import type { LedgerService } from '../modules/ledger/ledger.service.ts'\nexport type Used = LedgerService\n")).length, 1)
    assert.deepEqual(await boundaryProblems('src/flows/trade.flow.ts', "import type { LedgerService } from '../modules/ledger/index.ts'\nexport type Used = LedgerService\n"), [])
    assert.equal((await boundaryProblems('src/app.ts', "import { usersRoutes } from './modules/users/users.routes.ts'\nexport const used = usersRoutes\n")).length, 1)
  })

  test('a repository is imported only by the code beside it, and no entry file passes one on', async () => {
    const imports = (file: string, specifier: string) => boundaryProblems(file, `import * as repository from '${specifier}'\nexport const used = repository\n`)
    assert.deepEqual(await imports('src/modules/users/users.service.ts', './users.repository.ts'), [])
    assert.deepEqual(await imports('src/http/idempotency.ts', './idempotency.repository.ts'), [])
    assert.deepEqual(await imports('src/container.ts', './jobs/jobs.repository.ts'), ["'jobs.repository.ts' belongs to the module beside it: use that module's services instead"])
    assert.equal((await imports('src/modules/transactions/deposits.service.ts', '../accounts/accounts.repository.ts')).length, 1)
    assert.equal((await imports('src/flows/runner.ts', '../http/idempotency.repository.ts')).length, 1)
    assert.equal((await boundaryProblems('src/modules/users/index.ts', "export { insertUser } from './users.repository.ts'\n")).length, 1)
  })

  test('tests may import anything', async () => {
    assert.deepEqual(await boundaryProblems('test/accounts.test.ts', "import * as repository from '../src/modules/accounts/accounts.repository.ts'\nexport const used = repository\n"), [])
    assert.deepEqual(await boundaryProblems('src/modules/users/users.rules.test.ts', "import { AccountsService } from '../accounts/accounts.service.ts'\nexport const used = AccountsService\n"), [])
  })

  test('every module has its entry file', () => {
    const modules = fs.readdirSync(path.join(ROOT, 'src/modules'), { withFileTypes: true }).filter((entry) => entry.isDirectory())
    assert.ok(modules.length > 0)
    for (const module of modules) assert.ok(fs.existsSync(path.join(ROOT, 'src/modules', module.name, 'index.ts')), `${module.name}/index.ts`)
  })
})
