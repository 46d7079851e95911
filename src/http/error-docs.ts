import { STATUS_CODES } from 'node:http'
import { ERROR_CATALOGUE, type CatalogueEntry } from './error-catalogue.ts'
import { REQUEST_ID_HEADER } from './openapi.ts'

/** docs/errors.md, written by `npm run docs:errors`; a test checks the committed file is what this returns. */
export function renderErrorDocs(): string {
  const entries = Object.entries(ERROR_CATALOGUE as Record<string, CatalogueEntry>)
    .map(([code, entry]) => ({ code, ...entry }))
    .sort((a, b) => a.status - b.status || a.code.localeCompare(b.code))
  const rows = entries.map(({ status, code, description }) => `| ${status} ${STATUS_CODES[status] ?? ''} | \`${code}\` | ${description.replaceAll('|', '\\|')} |`)
  return [
    '# Errors',
    '',
    '<!-- Generated from src/http/error-catalogue.ts by `npm run docs:errors`; edit the catalogue, not this file. -->',
    '',
    'Every error the API answers has one shape, whatever the status:',
    '',
    '```json',
    '{ "code": "entity_not_found", "message": "The user cannot be found", "details": { "entity": "user" } }',
    '```',
    '',
    '- `code` is stable and meant for programs: branch on it, never on `message`.',
    '- `message` is for people; its wording may change.',
    '- `details` is optional; its content depends on the code (the table says what to expect).',
    '',
    `Every response, errors included, carries the \`${REQUEST_ID_HEADER}\` header; quote it when reporting a problem.`,
    '',
    'New codes may be added at any time. A client must handle a code it does not know with a default branch,',
    'by its status: a 4xx is a refusal of this request, a 5xx may succeed when tried again later.',
    '',
    'The token endpoint (`POST /core/oauth2/token`) answers in the OAuth 2.0 shape instead,',
    '`{"error", "error_description"}` (RFC 6749 §5.2).',
    '',
    '## Codes',
    '',
    '| Status | Code | When |',
    '|---|---|---|',
    ...rows,
    '',
  ].join('\n')
}
