import { Writable } from 'node:stream'

/**
 * Pino writes JSON lines (what log collectors read). On a terminal a person reads them: this stream turns each line
 * into `HH:MM:SS.mmm LEVEL message key=value …` with the level coloured. It formats what pino already redacted and
 * serialized, so it can never show more than the JSON line would.
 */

const LEVELS: Record<number, { name: string; colour: string }> = {
  10: { name: 'TRACE', colour: '\x1b[90m' },
  20: { name: 'DEBUG', colour: '\x1b[36m' },
  30: { name: 'INFO ', colour: '\x1b[32m' },
  40: { name: 'WARN ', colour: '\x1b[33m' },
  50: { name: 'ERROR', colour: '\x1b[31m' },
  60: { name: 'FATAL', colour: '\x1b[35m' },
}
const RESET = '\x1b[0m'
const DIM = '\x1b[2m'
/** Fields every line has, or that the line's head already shows. */
const HIDDEN = new Set(['level', 'time', 'pid', 'hostname', 'msg'])

function clock(time: unknown): string {
  const at = typeof time === 'number' ? new Date(time) : new Date()
  return at.toISOString().slice(11, 23)
}

function value(field: unknown): string {
  if (typeof field === 'string') return /^[\w.:/@+-]*$/.test(field) && field !== '' ? field : JSON.stringify(field)
  return JSON.stringify(field) ?? String(field)
}

/** Fastify's request lines, shortened to what a person scans for: method, path, status, time. */
function shortened(key: string, field: unknown): string[] {
  const object = typeof field === 'object' && field !== null ? (field as Record<string, unknown>) : undefined
  if (key === 'req' && typeof object?.method === 'string' && typeof object.url === 'string') return [`${object.method} ${object.url}`]
  if (key === 'res' && typeof object?.statusCode === 'number') return [`status=${object.statusCode}`]
  if (key === 'responseTime' && typeof field === 'number') return [`${field.toFixed(1)}ms`]
  return [`${key}=${value(field)}`]
}

/** One pino JSON line as a readable line; a line that is not JSON is returned as it came. */
export function readableLine(line: string, colours: boolean): string {
  let record: Record<string, unknown>
  try {
    const parsed: unknown = JSON.parse(line)
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return line
    record = parsed as Record<string, unknown>
  } catch {
    return line
  }
  const level = LEVELS[Number(record.level)] ?? { name: String(record.level ?? '').padEnd(5), colour: '' }
  const paint = (text: string, colour: string) => (colours && colour ? `${colour}${text}${RESET}` : text)
  const err = record.err as { stack?: unknown } | undefined
  const fields = Object.entries(record)
    .filter(([key]) => !HIDDEN.has(key) && !(key === 'err' && typeof err?.stack === 'string'))
    .flatMap(([key, field]) => shortened(key, field))
  const head = `${paint(clock(record.time), DIM)} ${paint(level.name, level.colour)} ${typeof record.msg === 'string' ? record.msg : ''}`
  const tail = fields.length > 0 ? ` ${paint(fields.join(' '), DIM)}` : ''
  const stack = typeof err?.stack === 'string' ? `\n${err.stack.replace(/^/gm, '    ')}` : ''
  return `${head}${tail}${stack}`
}

/** A stream for pino that writes readable lines to `out` (the terminal). */
export function readableLogStream(out: NodeJS.WritableStream & { isTTY?: boolean; hasColors?: () => boolean }): Writable {
  const colours = typeof out.hasColors === 'function' ? out.hasColors() : Boolean(out.isTTY)
  let pending = ''
  return new Writable({
    decodeStrings: false,
    write(chunk: string | Buffer, _encoding, done) {
      pending += chunk.toString()
      let end = pending.indexOf('\n')
      while (end >= 0) {
        const line = pending.slice(0, end)
        pending = pending.slice(end + 1)
        if (line.trim() !== '') out.write(`${readableLine(line, colours)}\n`)
        end = pending.indexOf('\n')
      }
      done()
    },
  })
}
