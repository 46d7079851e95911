/**
 * Lists where Tessera's generated OpenAPI document differs from the upstream reference documents
 * (../shared/reference), field by field, for every operation both serve: request bodies and query parameters, and
 * response bodies per status (names, types, enums, required), then the operations Tessera does not serve.
 * `node scripts/compare-reference.ts [path-prefix …]`, e.g. `node scripts/compare-reference.ts /core/kyc`.
 *
 * What is listed: a field one side has and the other lacks, a type, format or enum value that differs, a field
 * required on one side only, a union variant one side lacks. Descriptions, patterns and lengths are not compared.
 * A difference is not necessarily a gap: a field required in ours but optional in the reference is one we always
 * send; see the report of issue 17 for the ones judged intentional.
 */
import fs from 'node:fs'
import path from 'node:path'
import { buildApp } from '../src/app.ts'
import { loadConfig } from '../src/config.ts'
import { migrateToLatest, openDatabase } from '../src/db/database.ts'
import { loadOrCreateSecrets } from '../src/lib/data-dir.ts'

type Json = Record<string, unknown>
type Doc = { paths: Record<string, Record<string, Json>>; components: Record<string, Record<string, Json>> }

const REFERENCES = ['core-openapi.json', 'widgets-openapi.json', 'kyc-connector-openapi.json'].map((name) => path.resolve(import.meta.dirname, '../../shared/reference', name))

async function generated(): Promise<Doc> {
  const config = loadConfig({ DATA_DIR: ':memory:', PUBLIC_URL: 'http://tessera.test', LOG_LEVEL: 'silent' })
  const database = await openDatabase({ ...config, databaseUrl: null, dataDir: null })
  await migrateToLatest(database)
  const { app } = await buildApp({ config, database, secrets: loadOrCreateSecrets(null, config) })
  await app.ready()
  const doc = app.swagger() as unknown as Doc
  await app.close()
  return JSON.parse(JSON.stringify(doc)) as Doc
}

/** A schema with `$ref`s followed and `allOf`s merged (as far as the comparison needs). */
function resolver(doc: Doc) {
  const deref = (schema: Json | undefined, seen = new Set<string>()): Json => {
    if (!schema) return {}
    let current = schema
    while (typeof current.$ref === 'string') {
      const ref = current.$ref
      if (seen.has(ref)) return { $recursive: ref }
      seen = new Set([...seen, ref])
      const target = ref.replace(/^#\//, '').split('/').reduce<unknown>((node, key) => (node as Json)[key.replaceAll('~1', '/').replaceAll('~0', '~')], doc) as Json
      const { $ref: _, ...rest } = current
      current = { ...target, ...rest }
    }
    if (Array.isArray(current.allOf)) {
      const { allOf, ...rest } = current
      let merged: Json = { ...rest }
      for (const part of allOf as Json[]) merged = merge(merged, deref(part, seen))
      current = merged
    }
    return { ...current, $seen: seen }
  }
  const merge = (a: Json, b: Json): Json => {
    const out: Json = { ...a, ...b }
    if (a.properties || b.properties) out.properties = { ...(a.properties as Json), ...(b.properties as Json) }
    if (a.required || b.required) out.required = [...new Set([...((a.required as string[]) ?? []), ...((b.required as string[]) ?? [])])]
    if (a.type && b.type) {
      const types = (x: unknown) => (Array.isArray(x) ? x : [x]) as string[]
      const both = types(a.type).filter((t) => types(b.type).includes(t))
      out.type = both.length === 1 ? both[0] : both
    }
    return out
  }
  return deref
}

const typesOf = (schema: Json): string[] => {
  if (schema.const !== undefined) return [schema.const === null ? 'null' : typeof schema.const === 'object' ? 'object' : typeof schema.const]
  if (schema.type === undefined) {
    if (schema.properties) return ['object']
    if (schema.enum) return [...new Set((schema.enum as unknown[]).map((v) => (v === null ? 'null' : typeof v)))]
    return []
  }
  return (Array.isArray(schema.type) ? schema.type : [schema.type]).map((t: string) => (t === 'integer' ? 'number' : t)).sort()
}
const enumOf = (schema: Json): unknown[] | null => (Array.isArray(schema.enum) ? (schema.enum as unknown[]) : schema.const !== undefined ? [schema.const] : null)

const variantsOf = (schema: Json): Json[] | null => {
  const list = (schema.oneOf ?? schema.anyOf) as Json[] | undefined
  return list && list.length > 0 ? list : null
}

/** What tells a variant apart: the value of a property with a single allowed value (`type: card`). */
function tagOf(variant: Json, deref: (s: Json) => Json): string {
  const resolved = deref(variant)
  const properties = (resolved.properties ?? {}) as Record<string, Json>
  const tags = Object.entries(properties).flatMap(([name, p]) => {
    const values = enumOf(deref(p))
    return values && values.length === 1 ? [`${name}=${String(values[0])}`] : []
  })
  if (tags.length > 0) return tags.sort().join(',')
  const types = typesOf(resolved)
  if (types.length === 1 && types[0] !== 'object') return `type=${types[0]}`
  return `keys=${Object.keys(properties).sort().join('+')}`
}

/** Variants that are themselves unions (an individual user, current or legacy) become one variant per inner one. */
function flatten(list: Json[], deref: (s: Json) => Json): Json[] {
  return list.flatMap((variant) => {
    const inner = variantsOf(variant)
    if (!inner) return [variant]
    const { oneOf: _oneOf, anyOf: _anyOf, ...outer } = variant
    return inner.map((i) => {
      const resolved = deref(i)
      return {
        ...outer,
        ...resolved,
        properties: { ...(outer.properties as Json), ...(resolved.properties as Json) },
        required: [...new Set([...((outer.required as string[]) ?? []), ...((resolved.required as string[]) ?? [])])],
      }
    })
  })
}

interface Difference {
  where: string
  path: string
  what: string
}

function compare(where: string, ref: Json | undefined, ours: Json | undefined, refDeref: (s: Json) => Json, ourDeref: (s: Json) => Json, out: Difference[], at = '', depth = 0): void {
  if (!ref || !ours || depth > 12) return
  const r = refDeref(ref)
  const o = ourDeref(ours)
  if (r.$recursive || o.$recursive) return
  const add = (what: string) => out.push({ where, path: at || '(body)', what })

  const rv = variantsOf(r)
  const ov = variantsOf(o)
  if (rv || ov) {
    const rList = flatten((rv ?? [r]).map((v) => refDeref(v)), refDeref)
    const oList = flatten((ov ?? [o]).map((v) => ourDeref(v)), ourDeref)
    // Unions of bare types (`string | null`) are one type list.
    const bare = (list: Json[]) => list.every((v) => !v.properties && !variantsOf(v) && typesOf(v).length > 0 && !typesOf(v).includes('object'))
    if (bare(rList) && bare(oList)) {
      const rt = [...new Set(rList.flatMap(typesOf))].sort().join('|')
      const ot = [...new Set(oList.flatMap(typesOf))].sort().join('|')
      if (rt !== ot) add(`type ${rt} (reference) vs ${ot} (ours)`)
      return
    }
    if (rList.length === 1 && oList.length === 1) return compare(where, rList[0], oList[0], refDeref, ourDeref, out, at, depth + 1)
    // Each reference variant meets ours with the same tag and the most property names in common.
    const names = (v: Json) => new Set(Object.keys((v.properties ?? {}) as Json))
    const overlap = (a: Json, b: Json) => [...names(a)].filter((n) => names(b).has(n)).length
    const used = new Set<Json>()
    for (const v of rList) {
      const tag = tagOf(v, refDeref)
      const candidates = oList.filter((c) => tagOf(c, ourDeref) === tag || (tag.startsWith('keys=') && tagOf(c, ourDeref).startsWith('keys=')))
      const match = candidates.sort((a, b) => overlap(v, b) - overlap(v, a))[0]
      if (match) {
        used.add(match)
        compare(where, v, match, refDeref, ourDeref, out, `${at}<${tag}>`, depth + 1)
      } else add(`variant ${tag} missing in ours`)
    }
    for (const c of oList) if (!used.has(c)) add(`variant ${tagOf(c, ourDeref)} only in ours`)
    return
  }

  const rt = typesOf(r)
  const ot = typesOf(o)
  if (rt.length > 0 && ot.length > 0 && rt.join('|') !== ot.join('|')) add(`type ${rt.join('|')} (reference) vs ${ot.join('|')} (ours)`)
  const re = enumOf(r)
  const oe = enumOf(o)
  if (re && oe) {
    const missing = re.filter((v) => !oe.includes(v))
    const extra = oe.filter((v) => !re.includes(v))
    if (missing.length > 0) add(`enum values missing in ours: ${missing.join(', ')}`)
    if (extra.length > 0) add(`enum values only in ours: ${extra.join(', ')}`)
  } else if (re && !oe && re.length > 0) add(`reference restricts to ${re.join(', ')}; ours does not`)
  else if (!re && oe && oe.length > 0 && rt.length > 0) add(`ours restricts to ${oe.join(', ')}; reference does not`)
  if ((r.format ?? null) !== (o.format ?? null) && r.format && o.format) add(`format ${String(r.format)} vs ${String(o.format)}`)

  if (rt.includes('object') || ot.includes('object') || r.properties || o.properties) {
    const rp = (r.properties ?? {}) as Record<string, Json>
    const op = (o.properties ?? {}) as Record<string, Json>
    const rr = new Set((r.required ?? []) as string[])
    const or = new Set((o.required ?? []) as string[])
    for (const name of Object.keys(rp)) {
      const sub = at ? `${at}.${name}` : name
      const deprecated = refDeref(rp[name]!).deprecated === true || rp[name]!.deprecated === true ? ' (deprecated)' : ''
      if (!(name in op)) {
        if (o.additionalProperties === false || o.properties) out.push({ where, path: sub, what: `missing in ours${rr.has(name) ? ' (required in reference)' : ''}${deprecated}` })
        continue
      }
      if (rr.has(name) && !or.has(name)) out.push({ where, path: sub, what: 'required in reference, optional in ours' })
      if (!rr.has(name) && or.has(name)) out.push({ where, path: sub, what: 'optional in reference, required in ours' })
      compare(where, rp[name], op[name], refDeref, ourDeref, out, sub, depth + 1)
    }
    for (const name of Object.keys(op)) {
      if (!(name in rp) && (r.additionalProperties === false || Object.keys(rp).length > 0)) out.push({ where, path: at ? `${at}.${name}` : name, what: 'only in ours' })
    }
    const rAdd = r.additionalProperties
    const oAdd = o.additionalProperties
    if (typeof rAdd === 'object' && typeof oAdd === 'object') compare(where, rAdd as Json, oAdd as Json, refDeref, ourDeref, out, `${at}[*]`, depth + 1)
  }
  if (rt.includes('array') && ot.includes('array')) compare(where, r.items as Json, o.items as Json, refDeref, ourDeref, out, `${at}[]`, depth + 1)
}

function bodySchema(container: Json | undefined, deref: (s: Json) => Json): Json | undefined {
  if (!container) return undefined
  const resolved = deref(container)
  const content = resolved.content as Record<string, { schema?: Json }> | undefined
  return content?.['application/json']?.schema ?? content?.['application/x-www-form-urlencoded']?.schema
}

function queryParameters(operation: Json, deref: (s: Json) => Json): Record<string, { required: boolean; schema: Json }> {
  const out: Record<string, { required: boolean; schema: Json }> = {}
  for (const p of (operation.parameters ?? []) as Json[]) {
    const parameter = deref(p)
    if (parameter.in === 'query') out[parameter.name as string] = { required: parameter.required === true, schema: (parameter.schema ?? {}) as Json }
  }
  return out
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete']

async function main(): Promise<void> {
  const prefixes = process.argv.slice(2)
  const ours = await generated()
  const ourDeref = resolver(ours)
  const differences: Difference[] = []
  const onlyReference: string[] = []
  for (const file of REFERENCES) {
    if (!fs.existsSync(file)) continue
    const reference = JSON.parse(fs.readFileSync(file, 'utf8')) as Doc
    const refDeref = resolver(reference)
    for (const [route, item] of Object.entries(reference.paths)) {
      if (prefixes.length > 0 && !prefixes.some((prefix) => route.startsWith(prefix))) continue
      for (const method of METHODS) {
        const refOperation = item[method]
        if (!refOperation) continue
        const ourOperation = ours.paths[route]?.[method]
        const where = `${method.toUpperCase()} ${route}`
        if (!ourOperation) {
          onlyReference.push(where)
          continue
        }
        compare(`${where} request`, bodySchema(refOperation.requestBody as Json, refDeref), bodySchema(ourOperation.requestBody as Json, ourDeref), refDeref, ourDeref, differences)
        const refQuery = queryParameters(refOperation, refDeref)
        const ourQuery = queryParameters(ourOperation, ourDeref)
        for (const [name, parameter] of Object.entries(refQuery)) {
          const mine = ourQuery[name]
          if (!mine) differences.push({ where: `${where} query`, path: name, what: `missing in ours${parameter.required ? ' (required in reference)' : ''}` })
          else compare(`${where} query`, parameter.schema, mine.schema, refDeref, ourDeref, differences, name)
        }
        for (const name of Object.keys(ourQuery)) if (!refQuery[name]) differences.push({ where: `${where} query`, path: name, what: 'only in ours' })
        const refResponses = (refOperation.responses ?? {}) as Record<string, Json>
        const ourResponses = (ourOperation.responses ?? {}) as Record<string, Json>
        for (const [status, response] of Object.entries(refResponses)) {
          if (!ourResponses[status]) {
            differences.push({ where: `${where} ${status}`, path: '(status)', what: 'status only in reference' })
            continue
          }
          compare(`${where} ${status}`, bodySchema(response, refDeref), bodySchema(ourResponses[status], ourDeref), refDeref, ourDeref, differences)
        }
        const extra = Object.keys(ourResponses).filter((status) => !refResponses[status])
        if (extra.length > 0) differences.push({ where: `${where} statuses`, path: '(status)', what: `only in ours: ${extra.join(', ')}` })
      }
    }
  }
  let last = ''
  for (const difference of differences) {
    if (difference.where !== last) process.stdout.write(`\n${difference.where}\n`)
    last = difference.where
    process.stdout.write(`  ${difference.path}: ${difference.what}\n`)
  }
  if (onlyReference.length > 0) process.stdout.write(`\nNot served by Tessera:\n${onlyReference.map((where) => `  ${where}`).join('\n')}\n`)
  process.stdout.write(`\n${differences.length} differences\n`)
}

await main()
