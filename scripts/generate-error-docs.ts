/** Writes docs/errors.md from the error catalogue (src/http/error-catalogue.ts): `npm run docs:errors`. */
import fs from 'node:fs'
import path from 'node:path'
import { renderErrorDocs } from '../src/http/error-docs.ts'

const target = path.resolve(import.meta.dirname, '..', 'docs', 'errors.md')
fs.writeFileSync(target, renderErrorDocs())
process.stdout.write(`Wrote ${path.relative(process.cwd(), target)}\n`)
