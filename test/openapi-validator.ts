import assert from 'node:assert/strict'
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'

type Json = Record<string, unknown>

interface Operation {
  operationId?: string
  responses?: Record<string, { content?: Record<string, { schema?: Json }>; headers?: Record<string, Json> }>
}

export interface CheckedResponse {
  method: string
  url: string
  status: number
  headers: Record<string, string | string[] | number | undefined>
  body: string
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/**
 * Checks responses against the service's own generated OpenAPI document: the operation must declare the
 * status, the body must validate against the declared schema, and the request id header must be there.
 */
export class OpenApiValidator {
  private readonly document: { paths: Record<string, Record<string, Operation>>; components: Json }
  private readonly ajv: Ajv2020
  private readonly validators = new Map<string, ValidateFunction>()
  private readonly templates: { template: string; regex: RegExp }[]
  /** operationId → statuses seen, to report which declared responses the tests exercised. */
  readonly seen = new Map<string, Set<string>>()

  constructor(document: Json) {
    this.document = document as typeof this.document
    this.ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true })
    addFormats.default(this.ajv)
    this.ajv.addSchema({ $id: 'openapi.json', components: this.document.components })
    this.templates = Object.keys(this.document.paths).map((template) => ({
      template,
      regex: new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`),
    }))
  }

  private compile(key: string, schema: Json): ValidateFunction {
    let validate = this.validators.get(key)
    if (!validate) {
      const rewritten = JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"openapi.json#/components/')) as Json
      validate = this.ajv.compile(rewritten)
      this.validators.set(key, validate)
    }
    return validate
  }

  /** The operation of a concrete method and URL, or undefined when no documented path matches. */
  operationFor(method: string, url: string): { template: string; operation: Operation } | undefined {
    const path = url.split('?')[0]!
    const exact = this.document.paths[path]?.[method.toLowerCase()]
    if (exact) return { template: path, operation: exact }
    for (const { template, regex } of this.templates) {
      const operation = this.document.paths[template]?.[method.toLowerCase()]
      if (operation && regex.test(path)) return { template, operation }
    }
    return undefined
  }

  check(response: CheckedResponse): void {
    const label = `${response.method} ${response.url} → ${response.status}`
    const requestId = response.headers['x-service-request-id']
    assert.ok(typeof requestId === 'string' && UUID.test(requestId), `${label}: x-service-request-id must be a UUID (got ${String(requestId)})`)

    const found = this.operationFor(response.method, response.url)
    if (!found) {
      // Unknown routes answer in the error envelope.
      assert.equal(response.status, 404, `${label}: no documented operation`)
      this.validateBody(label, 'error', { $ref: '#/components/schemas/error' }, response.body)
      return
    }
    const { operation, template } = found
    const status = String(response.status)
    const declared = operation.responses?.[status] ?? operation.responses?.default
    assert.ok(declared, `${label}: status ${status} is not declared for ${response.method} ${template}`)
    const id = operation.operationId ?? `${response.method} ${template}`
    this.seen.set(id, (this.seen.get(id) ?? new Set()).add(status))

    const content = declared.content
    if (!content) {
      assert.equal(response.body, '', `${label}: the document declares no body`)
      return
    }
    const contentType = String(response.headers['content-type'] ?? '').split(';')[0]!.trim()
    // A media range (`image/*`, `*/*`) declares every type it covers, e.g. a download that keeps the file's type.
    const range = `${contentType.split('/')[0]}/*`
    const media = content[contentType] ?? (contentType === 'application/json' ? undefined : content[range] ?? content['*/*'] ?? content['text/plain'])
    assert.ok(media, `${label}: content type ${contentType} is not declared (declared: ${Object.keys(content).join(', ')})`)
    if (contentType === 'application/json' && media.schema) {
      this.validateBody(label, `${id} ${status} ${contentType}`, media.schema, response.body)
    }
  }

  private validateBody(label: string, key: string, schema: Json, body: string): void {
    let parsed: unknown
    try {
      parsed = JSON.parse(body)
    } catch {
      assert.fail(`${label}: body is not JSON: ${body.slice(0, 200)}`)
    }
    const validate = this.compile(key, schema)
    assert.ok(validate(parsed), `${label}: body does not match the document: ${this.ajv.errorsText(validate.errors)}\n${body.slice(0, 500)}`)
  }
}
