import { INGESTION_PROCESSES, type IngestionProcess } from '../../providers/kyc-connector/connector.ts'
import type { IngestionErrorCode, IngestionStep } from './ingestions.schemas.ts'

/** Why a Veriff ingestion cannot be made from its sessions (409 `operation_not_allowed`, `details.reasons`). */
export type IngestionRefusal =
  | 'provider-not-configured'
  | 'ingestion-not-supported-by-provider-config'
  | 'ingestion-process-not-resolvable'
  | 'duplicate-session'

export interface SessionInput {
  processes?: readonly IngestionProcess[] | undefined
  sessionId: string
  integrationName: string
}

export interface ResolvedSession {
  processes: IngestionProcess[]
  sessionId: string
  integrationName: string
}

export type Resolution =
  | { ok: true; processes: IngestionProcess[]; sessions: ResolvedSession[] }
  | { ok: false; reason: IngestionRefusal; message: string }

/** Processes in the order the API lists them. */
export function ordered(processes: Iterable<IngestionProcess>): IngestionProcess[] {
  const set = new Set(processes)
  return INGESTION_PROCESSES.filter((process) => set.has(process))
}

const quoted = (processes: readonly string[]) => processes.map((process) => `"${process}"`).join(', ')

/**
 * Which processes a Veriff ingestion imports, and from which session each: a session may only provide processes
 * its integration performs (its integration's, among those requested, when it names none); every requested process
 * must come from some session (all that the sessions provide when none are requested); a session is named once.
 */
export function resolveVeriffSessions(
  requested: readonly IngestionProcess[] | undefined,
  sessions: readonly SessionInput[],
  integrations: ReadonlyMap<string, readonly string[]>,
): Resolution {
  const seen = new Set<string>()
  for (const session of sessions) {
    const id = session.sessionId.toLowerCase()
    if (seen.has(id)) return { ok: false, reason: 'duplicate-session', message: 'Each session must reference a unique session ID' }
    seen.add(id)
  }
  const resolved: ResolvedSession[] = []
  for (const session of sessions) {
    const performs = integrations.get(session.integrationName)
    if (performs === undefined) {
      return { ok: false, reason: 'ingestion-not-supported-by-provider-config', message: `Integration "${session.integrationName}" is not in the Veriff configuration` }
    }
    let processes: IngestionProcess[]
    if (session.processes !== undefined) {
      const unsupported = session.processes.filter((process) => !performs.includes(process))
      if (unsupported.length > 0) {
        return {
          ok: false,
          reason: 'ingestion-not-supported-by-provider-config',
          message: `Session specifies processes that are not supported by the integration configuration: ${quoted(unsupported)}`,
        }
      }
      processes = ordered(session.processes)
    } else {
      processes = ordered((performs as IngestionProcess[]).filter((process) => requested === undefined || requested.includes(process)))
    }
    resolved.push({ processes, sessionId: session.sessionId.toLowerCase(), integrationName: session.integrationName })
  }
  const provided = new Set(resolved.flatMap((session) => session.processes))
  const processes = requested === undefined ? ordered(provided) : ordered(requested)
  const missing = processes.filter((process) => !provided.has(process))
  if (missing.length > 0) {
    return { ok: false, reason: 'ingestion-process-not-resolvable', message: `Process ${quoted(missing)} is not covered by any session in the ingestion parameters` }
  }
  if (processes.length === 0) {
    return { ok: false, reason: 'ingestion-process-not-resolvable', message: 'The sessions provide none of the requested processes' }
  }
  return { ok: true, processes, sessions: resolved }
}

/** The session a process is imported from: the first that provides it. */
export function sessionFor(sessions: readonly ResolvedSession[], process: IngestionProcess): ResolvedSession {
  return sessions.find((session) => session.processes.includes(process))!
}

/** The key of a process in an ingestion's `result`. */
export function resultKey(process: IngestionProcess): 'profile' | 'address' | 'identity' | 'proofOfAddress' {
  return process === 'proof-of-address' ? 'proofOfAddress' : process
}

/**
 * What a process's import needs first: identity checks the person the profile declares, a proof of address the
 * address; when both are imported and the first fails, the second fails with it (`dependent_process_failed`).
 */
export const DEPENDS_ON: Partial<Record<IngestionProcess, IngestionProcess>> = { identity: 'profile', 'proof-of-address': 'address' }

export interface ProcessError {
  code: IngestionErrorCode
  message: string
  step: IngestionStep
  hint?: string
  details?: Record<string, unknown>
}

export interface ProcessResult {
  status: 'processing' | 'completed' | 'failed'
  data?: object
  files?: object[]
  error?: ProcessError
}

/** Whether every process has its outcome. */
export function allSettled(results: Readonly<Record<string, ProcessResult>>, processes: readonly IngestionProcess[]): boolean {
  return processes.every((process) => results[resultKey(process)]?.status === 'completed' || results[resultKey(process)]?.status === 'failed')
}
