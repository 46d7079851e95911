import jsonpatch, { type Operation } from 'fast-json-patch'

export interface PatchFailure {
  /** Index of the operation that failed, when one did. */
  index?: number
  operation?: { op?: unknown; path?: unknown; from?: unknown }
  reason: string
}

/** RFC 6901 §4: an array index is `0` or digits without a leading zero; `-` is handled by the engine. */
const ARRAY_INDEX = /^(0|[1-9][0-9]*)$/

function unescape(segment: string): string {
  return segment.replace(/~1/g, '/').replace(/~0/g, '~')
}

/** The first segment of `pointer` that indexes an array but is not a valid index, walking `document`. */
function badArrayIndex(document: unknown, pointer: unknown): string | undefined {
  if (typeof pointer !== 'string' || !pointer.startsWith('/')) return undefined
  let node = document
  for (const raw of pointer.slice(1).split('/')) {
    const segment = unescape(raw)
    if (Array.isArray(node)) {
      if (segment !== '-' && !ARRAY_INDEX.test(segment)) return segment
      node = segment === '-' ? undefined : node[Number(segment)]
    } else if (node !== null && typeof node === 'object') {
      node = (node as Record<string, unknown>)[segment]
    } else {
      return undefined
    }
  }
  return undefined
}

function validate(operation: Operation, index: number, document: unknown, existingPath: string): void {
  jsonpatch.validator(operation, index, document, existingPath)
  for (const pointer of [operation.path, (operation as { from?: unknown }).from]) {
    const segment = badArrayIndex(document, pointer)
    if (segment !== undefined) {
      throw new jsonpatch.JsonPatchError(`Array index "${segment}" is not a valid index (no leading zeros)`, 'OPERATION_PATH_ILLEGAL_ARRAY_INDEX', index, operation, document)
    }
  }
}

/**
 * Applies an RFC 6902 patch to a copy of `document`, all operations or none. Operations are validated
 * one by one against the document as it is at that step.
 */
export function applyJsonPatch(document: unknown, patch: unknown[]): { document: unknown } | { failure: PatchFailure } {
  // The library passes index 0 to validators whatever the operation; the loop below knows the real one.
  let position: number | undefined
  try {
    let current = structuredClone(document)
    const operations = structuredClone(patch) as Operation[]
    if (!Array.isArray(operations)) throw new jsonpatch.JsonPatchError('A patch must be an array of operations', 'SEQUENCE_NOT_AN_ARRAY')
    // One operation at a time on a private copy, so that a failure reports its own index.
    operations.forEach((operation, index) => {
      position = index
      current = jsonpatch.applyOperation(current, operation, validate, true, true, index).newDocument
    })
    return { document: current }
  } catch (error) {
    if (error instanceof jsonpatch.JsonPatchError) {
      const operation = error.operation as { op?: unknown; path?: unknown; from?: unknown } | undefined
      const described = operation && typeof operation === 'object'
        ? Object.fromEntries(['op', 'path', 'from'].filter((k) => k in operation).map((k) => [k, operation[k as keyof typeof operation]]))
        : undefined
      // The library's messages carry a dump of the document after a newline; keep the first line.
      const reason = `${error.name}: ${error.message.split('\n')[0]}`
      return { failure: { ...(position !== undefined ? { index: position } : {}), ...(described ? { operation: described } : {}), reason } }
    }
    return { failure: { reason: error instanceof Error ? error.message.split('\n')[0]! : String(error) } }
  }
}
