import { createHash, timingSafeEqual } from 'node:crypto'
import { Ajv, type ValidateFunction } from 'ajv'
import addFormats from 'ajv-formats'
import type { TSchema } from 'typebox'
import type { Db, KycIngestionRow } from '../../db/schema.ts'
import { pageWindow, type PageWindow } from '../../http/pagination.ts'
import type { Principal } from '../../http/principal.ts'
import { DomainError, notFound, operationNotAllowed, requestInvalid } from '../../lib/errors.ts'
import { uuidv7 } from '../../lib/ids.ts'
import { enqueue, JobDeferral, wakeJobs, type JobHandlers } from '../../jobs/queue.ts'
import {
  dataFor,
  INGESTION_PROCESSES,
  ProviderClientError,
  type IngestionProcess,
  type ProviderFile,
  type ProviderRecord,
  type Readiness,
  type SumsubSource,
  type VeriffCredentials,
  type VeriffSource,
} from '../../providers/kyc-connector/connector.ts'
import { sumsubCallbackApplicant, verifySumsubDigest } from '../../providers/kyc-connector/sumsub.ts'
import { veriffCallbackSession, verifyVeriffSignature } from '../../providers/kyc-connector/veriff.ts'
import { auditObject } from '../audit/index.ts'
import { recordEvent } from '../events/index.ts'
import { UpdateAddressBody, UpdateIdentityBody, UpdateProfileBody, UpdateProofOfAddressBody, type KycService } from '../kyc/index.ts'
import { maySettle, nextIngestionStatus, type IngestionEvent, type ProcessOutcome } from './ingestions.machine.ts'
import * as repository from './ingestions.repository.ts'
import {
  allSettled,
  DEPENDS_ON,
  ordered,
  resolveVeriffSessions,
  resultKey,
  sessionFor,
  type ProcessError,
  type ProcessResult,
  type ResolvedSession,
} from './ingestions.rules.ts'
import type {
  CreateSumsubIngestionBody,
  CreateVeriffIngestionBody,
  IngestionErrorCode,
  IngestionProvider,
  IngestionView,
  ListIngestionsQuery,
} from './ingestions.schemas.ts'
import type { KycConnectorService } from './kyc-connector.service.ts'

export const INGESTION_JOB = 'kyc-connector.ingestion'
/** Attempts at an ingestion that keeps failing for a reason other than the provider's answer (a database outage). */
const MAX_ATTEMPTS = 8

/** What an ingestion needs of the KYC processes: the user's state, and the updates a client could make itself. */
export type IngestionKyc = Pick<KycService, 'statusesFor' | 'updateProfile' | 'updateAddress' | 'updateIdentity' | 'updateProofOfAddress'>

/** Keeps a downloaded file as one of the user's files (the files module). */
export interface IngestionFiles {
  keep(organizationId: string, userId: string, input: { id: string; category: 'document' | 'image' | 'video'; contentType: string; content: Buffer }): Promise<{ id: string; size: number }>
}

export interface IngestionSettings {
  readinessTimeoutMs: number
  recheckMs: number
  sumsubWebhookSecret: string | null
}

const PROVIDER_TITLES: Record<IngestionProvider, string> = { sumsub: 'Sumsub', veriff: 'Veriff' }

/** Never shown: what a later run of the job needs. */
interface IngestionState {
  /** Sumsub: the applicant the share token was exchanged for (a token works once). */
  applicantId?: string
  /** Processes whose KYC update was sent: a run after a crash finds them done rather than refused. */
  applying?: IngestionProcess[]
}

const ajv = new Ajv({ strict: false, allErrors: false })
addFormats.default(ajv)
const validators = new Map<TSchema, ValidateFunction>()
/** Whether a KYC update built from the provider's data is one a client could send (the route's own schema). */
function acceptable(schema: TSchema, body: unknown): boolean {
  let validate = validators.get(schema)
  if (!validate) {
    validate = ajv.compile(schema)
    validators.set(schema, validate)
  }
  return validate(body)
}

function definedOnly<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T
}

/** A file id that is the same each time the job downloads the same file for the same ingestion. */
function fileIdOf(ingestionId: string, file: ProviderFile): string {
  const hex = createHash('sha256').update(`${ingestionId}\n${file.locator}\n${file.context}`).digest('hex')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${((Number.parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16)}${hex.slice(17, 20)}-${hex.slice(20, 32)}`
}

function sameText(a: string, b: string): boolean {
  const left = Buffer.from(a)
  const right = Buffer.from(b)
  return left.length === right.length && timingSafeEqual(left, right)
}

class ProcessFailure extends Error {
  readonly failure: ProcessError
  constructor(failure: ProcessError) {
    super(failure.message)
    this.failure = failure
  }
}

const fail = (code: IngestionErrorCode, step: ProcessError['step'], message: string, details?: Record<string, unknown>): ProcessFailure =>
  new ProcessFailure(definedOnly({ code, step, message, details }))

/**
 * KYC connector ingestions: a user's verification at Veriff or Sumsub imported into their KYC processes (profile,
 * address, identity, proof of address). Creating one records it `queued` with its job; a worker then reads the
 * provider (waiting, up to the readiness timeout, while the provider has not decided; a verified provider callback
 * wakes it), downloads the files that evidence identity and proof of address into the user's files, and updates each
 * KYC process as the client itself could (the same rules and refusals), recording each process's outcome.
 */
export class KycIngestionsService {
  /** The providers whose ingestion operations this deployment serves. */
  readonly providers: readonly IngestionProvider[]
  private readonly db: Db
  private readonly connector: KycConnectorService
  private readonly veriff: VeriffSource | null
  private readonly sumsub: SumsubSource | null
  private readonly kyc: IngestionKyc
  private readonly files: IngestionFiles
  private readonly settings: IngestionSettings
  private readonly poke: () => void

  constructor(deps: {
    db: Db
    connector: KycConnectorService
    veriff: VeriffSource | null
    sumsub: SumsubSource | null
    kyc: IngestionKyc
    files: IngestionFiles
    settings: IngestionSettings
    poke?: () => void
  }) {
    this.db = deps.db
    this.connector = deps.connector
    this.veriff = deps.veriff
    this.sumsub = deps.sumsub
    this.kyc = deps.kyc
    this.files = deps.files
    this.settings = deps.settings
    this.poke = deps.poke ?? (() => {})
    // Veriff's sessions are read with the organization's own integrations, so its ingestions exist where its
    // configuration does; Sumsub's share tokens are imported with the deployment's account.
    this.providers = ['sumsub', ...(deps.connector.providers.includes('veriff') ? (['veriff'] as const) : [])]
  }

  // Reading

  private view(row: KycIngestionRow): IngestionView {
    return definedOnly({
      id: row.id,
      userId: row.user_id,
      status: row.status,
      processes: row.processes,
      provider: row.provider as IngestionProvider,
      parameters: row.parameters,
      result: row.result ?? undefined,
      createdAt: row.created_at.toISOString(),
      updatedAt: row.updated_at.toISOString(),
      startedAt: row.started_at?.toISOString(),
      finishedAt: row.finished_at?.toISOString(),
    })
  }

  private userOf(principal: Principal): string {
    if (principal.userId === null) throw notFound('user')
    return principal.userId
  }

  async get(principal: Principal, provider: IngestionProvider, ingestionId: string): Promise<IngestionView> {
    const key = { organizationId: principal.organizationId, userId: this.userOf(principal), provider }
    const row = await repository.findUserIngestion(this.db, key, ingestionId.toLowerCase())
    if (!row) throw notFound('ingestion')
    return this.view(row)
  }

  async list(principal: Principal, provider: IngestionProvider, query: ListIngestionsQuery): Promise<{ ingestions: IngestionView[]; window: PageWindow; anchor: string | undefined; hasNext: boolean }> {
    const key = { organizationId: principal.organizationId, userId: this.userOf(principal), provider }
    const window = pageWindow(query)
    const page = await repository.listUserIngestions(this.db, key, window)
    return { ingestions: page.items.map((row) => this.view(row)), window, anchor: page.anchor, hasNext: page.hasNext }
  }

  // Creating

  async createSumsub(principal: Principal, body: CreateSumsubIngestionBody): Promise<IngestionView> {
    if (!this.sumsub) throw operationNotAllowed('Sumsub ingestions are not configured for this deployment', ['provider-not-configured'])
    const processes = ordered(body.processes ?? INGESTION_PROCESSES)
    return this.create(principal, 'sumsub', processes, { shareToken: body.shareToken }, [])
  }

  async createVeriff(principal: Principal, body: CreateVeriffIngestionBody): Promise<IngestionView> {
    const integrations = await this.connector.integrationsFor(principal.organizationId, 'veriff')
    if (!integrations || !this.veriff) throw operationNotAllowed('The KYC connector is not configured for this organization', ['provider-not-configured'])
    const resolution = resolveVeriffSessions(body.processes, body.sessions, new Map(integrations.map((integration) => [integration.name, integration.processes])))
    if (!resolution.ok) throw operationNotAllowed(resolution.message, [resolution.reason])
    const sessions = resolution.sessions
    return this.create(principal, 'veriff', resolution.processes, { sessions }, sessions.map((session) => session.sessionId))
  }

  private async create(principal: Principal, provider: IngestionProvider, processes: IngestionProcess[], parameters: Record<string, unknown>, references: string[]): Promise<IngestionView> {
    const userId = this.userOf(principal)
    // 404 for a user who is not an active individual of the organization.
    await this.kyc.statusesFor(principal.organizationId, userId)
    const at = new Date()
    const id = uuidv7(at.getTime())
    auditObject('ingestion', id)
    const row = await this.db.transaction().execute(async (tx) => {
      const row = await repository.insertIngestion(tx, { organizationId: principal.organizationId, id, userId, provider, processes, parameters, state: {}, at })
      await repository.addReferences(tx, principal.organizationId, provider, id, references)
      await enqueue(tx, { type: INGESTION_JOB, payload: { ingestionId: id }, organizationId: principal.organizationId, maxAttempts: MAX_ATTEMPTS })
      await this.announce(tx, row, 'created', at)
      return row
    })
    this.poke()
    return this.view(row)
  }

  private async announce(executor: Parameters<typeof recordEvent>[0], row: KycIngestionRow, what: 'created' | 'status-changed', at: Date): Promise<void> {
    await recordEvent(executor, {
      organizationId: row.organization_id,
      type: `kyc-connector.${row.provider}.ingestion.${what}`,
      subject: { type: 'ingestion', id: row.id },
      userId: row.user_id,
      data: { ingestion: this.view(row) },
      occurredAt: at,
    })
  }

  // Callbacks

  /**
   * A Veriff callback (decision or event) about a session: accepted only when `X-AUTH-CLIENT` is the API key, and
   * `X-HMAC-SIGNATURE` the signature of the raw body under the shared secret, of the integration an unfinished
   * ingestion reads that session with. It only wakes those ingestions: they read the decision from Veriff themselves.
   */
  async veriffCallback(raw: Buffer, headers: { apiKey: string | undefined; signature: string | undefined }): Promise<void> {
    const sessionId = veriffCallbackSession(parseJson(raw))
    const waiting = sessionId === null ? [] : await repository.ingestionsWaitingOn(this.db, 'veriff', sessionId)
    const verified: KycIngestionRow[] = []
    for (const row of waiting) {
      const integrations = await this.connector.integrationsFor(row.organization_id, 'veriff')
      const sessions = (row.parameters.sessions ?? []) as ResolvedSession[]
      const names = new Set(sessions.filter((session) => session.sessionId === sessionId).map((session) => session.integrationName))
      const signed = (integrations ?? []).some(
        (integration) =>
          names.has(integration.name) &&
          headers.apiKey !== undefined &&
          sameText(headers.apiKey, integration.apiKey) &&
          verifyVeriffSignature(integration.sharedSecretKey, raw, headers.signature),
      )
      if (signed) verified.push(row)
    }
    if (verified.length === 0) throw callbackRefused()
    await this.wake(verified)
  }

  /**
   * A Sumsub callback about an applicant: accepted only when `X-Payload-Digest` is the digest of the raw body under
   * the deployment's webhook secret. It only wakes the unfinished ingestions of that applicant.
   */
  async sumsubCallback(raw: Buffer, headers: { digest: string | undefined; algorithm: string | undefined }): Promise<void> {
    const secret = this.settings.sumsubWebhookSecret
    if (secret === null || !verifySumsubDigest(secret, raw, headers.digest, headers.algorithm)) throw callbackRefused()
    const applicantId = sumsubCallbackApplicant(parseJson(raw))
    if (applicantId === null) throw requestInvalid('body', [{ property: 'applicantId', rule: 'required' }])
    await this.wake(await repository.ingestionsWaitingOn(this.db, 'sumsub', applicantId))
  }

  private async wake(rows: readonly KycIngestionRow[]): Promise<void> {
    const byOrganization = new Map<string, string[]>()
    for (const row of rows) byOrganization.set(row.organization_id, [...(byOrganization.get(row.organization_id) ?? []), row.id])
    for (const [organizationId, ids] of byOrganization) await wakeJobs(this.db, INGESTION_JOB, organizationId, 'ingestionId', ids)
    if (rows.length > 0) this.poke()
  }

  // Processing

  registerJobs(jobs: JobHandlers): void {
    jobs.register(INGESTION_JOB, async (job, { attempt }) => {
      const ingestionId = (job.payload as { ingestionId?: unknown }).ingestionId
      if (typeof ingestionId !== 'string' || job.organization_id === null) return
      const deferral = await this.run(job.organization_id, ingestionId, attempt >= job.max_attempts)
      if (deferral) throw deferral
    })
  }

  /**
   * One run of an ingestion's job: settles every process it can, and answers when to look again while some wait for
   * the provider's decision. Every outcome is saved as it comes, so that a run after a crash goes on from there.
   * On its last attempt, a failure that is not the provider's answer fails the processes still open (`unknown_error`).
   */
  async run(organizationId: string, ingestionId: string, lastAttempt = false): Promise<JobDeferral | null> {
    let row = await repository.findIngestion(this.db, organizationId, ingestionId)
    if (!row || row.status === 'finished') return null
    if (row.status === 'queued') {
      const processing = Object.fromEntries(row.processes.map((process) => [resultKey(process as IngestionProcess), { status: 'processing' }]))
      row = await this.save(row, { event: 'start', result: processing, startedAt: new Date() })
    }
    const run = new IngestionRun(this.runContext(), row)
    try {
      if (row.provider === 'veriff') await run.veriff()
      else await run.sumsub()
    } catch (error) {
      if (!lastAttempt) throw error
      await run.failOpen(fail('unknown_error', 'fetch-provider-data', 'The ingestion could not be completed'))
    }
    return run.finishOrWait()
  }

  /**
   * Saves a change of the ingestion. A status change is the machine's transition for `event`, made only from the
   * status this run read (a concurrent run's change wins: this one stops), with its event in the same transaction.
   */
  async save(row: KycIngestionRow, change: Omit<repository.IngestionChange, 'at' | 'status'> & { event?: IngestionEvent }): Promise<KycIngestionRow> {
    const at = new Date()
    const { event, ...fields } = change
    const to = event === undefined ? undefined : nextIngestionStatus(row.status, event)
    if (to === null) throw new Error(`Ingestion ${row.id} cannot ${event} from ${row.status}`)
    return this.db.transaction().execute(async (tx) => {
      const saved = await repository.updateIngestion(tx, row.organization_id, row.id, { ...fields, ...(to !== undefined ? { status: { from: row.status, to } } : {}), at })
      if (!saved) throw new Error(`Ingestion ${row.id} changed under this run; the job runs again from what is stored`)
      if (to !== undefined) {
        await this.announce(tx, saved, 'status-changed', at)
        if (to === 'finished') await repository.removeReferences(tx, row.organization_id, row.id)
      }
      return saved
    })
  }

  async rememberApplicant(row: KycIngestionRow, applicantId: string): Promise<KycIngestionRow> {
    return this.db.transaction().execute(async (tx) => {
      await repository.addReferences(tx, row.organization_id, 'sumsub', row.id, [applicantId])
      const saved = await repository.updateIngestion(tx, row.organization_id, row.id, { state: { ...row.state, applicantId }, at: new Date() })
      if (!saved) throw new Error(`Ingestion ${row.id} is gone`)
      return saved
    })
  }

  private runContext(): RunContext {
    return {
      veriff: this.veriff,
      sumsub: this.sumsub,
      connector: this.connector,
      kyc: this.kyc,
      files: this.files,
      settings: this.settings,
      save: (row, change) => this.save(row, change),
      rememberApplicant: (row, applicantId) => this.rememberApplicant(row, applicantId),
    }
  }
}

/** What one run of an ingestion works with. */
interface RunContext {
  veriff: VeriffSource | null
  sumsub: SumsubSource | null
  connector: KycConnectorService
  kyc: IngestionKyc
  files: IngestionFiles
  settings: IngestionSettings
  save(row: KycIngestionRow, change: Omit<repository.IngestionChange, 'at' | 'status'> & { event?: IngestionEvent }): Promise<KycIngestionRow>
  rememberApplicant(row: KycIngestionRow, applicantId: string): Promise<KycIngestionRow>
}

function parseJson(raw: Buffer): unknown {
  try {
    return JSON.parse(raw.toString('utf8'))
  } catch {
    return null
  }
}

function callbackRefused(): DomainError {
  return new DomainError('signature_invalid', 'The callback is not signed by the provider for an ingestion in progress')
}

/** One run of one ingestion's job (see `KycIngestionsService.run`). */
class IngestionRun {
  private readonly service: RunContext
  private row: KycIngestionRow
  private waiting = false

  constructor(service: RunContext, row: KycIngestionRow) {
    this.service = service
    this.row = row
  }

  private get processes(): IngestionProcess[] {
    return this.row.processes as IngestionProcess[]
  }

  private get results(): Record<string, ProcessResult> {
    return (this.row.result ?? {}) as Record<string, ProcessResult>
  }

  private get state(): IngestionState {
    return this.row.state as IngestionState
  }

  private open(processes: readonly IngestionProcess[]): IngestionProcess[] {
    return processes.filter((process) => this.results[resultKey(process)]?.status === 'processing')
  }

  private async settle(process: IngestionProcess, result: ProcessResult): Promise<void> {
    if (!maySettle(this.results[resultKey(process)]?.status as ProcessOutcome | undefined, result.status as ProcessOutcome)) return
    this.row = await this.service.save(this.row, { result: { ...this.results, [resultKey(process)]: definedOnly(result) } })
  }

  async failOpen(failure: ProcessFailure, processes: readonly IngestionProcess[] = this.processes): Promise<void> {
    for (const process of this.open(processes)) await this.settle(process, { status: 'failed', error: failure.failure })
  }

  /** Whether the readiness timeout has passed since the ingestion started. */
  private timedOut(): boolean {
    return Date.now() - this.row.started_at!.getTime() >= this.service.settings.readinessTimeoutMs
  }

  private async readiness(processes: readonly IngestionProcess[], read: () => Promise<Readiness>, provider: IngestionProvider): Promise<ProviderRecord | null> {
    const clientError = provider === 'veriff' ? 'veriff_client_error' : 'sumsub_client_error'
    let readiness: Readiness
    try {
      readiness = await read()
    } catch (error) {
      if (!(error instanceof ProviderClientError)) throw error
      await this.failOpen(fail(clientError, 'fetch-provider-data', error.message, { status: error.status }), processes)
      return null
    }
    if (readiness.state === 'rejected') {
      const code = provider === 'veriff' ? 'veriff_session_not_approved' : 'sumsub_applicant_review_state_invalid'
      await this.failOpen(fail(code, 'fetch-provider-data', readiness.message), processes)
      return null
    }
    if (readiness.state === 'pending') {
      if (this.timedOut()) {
        await this.failOpen(fail('provider_data_readiness_timeout_exceeded', 'fetch-provider-data', `${PROVIDER_TITLES[provider]} has not decided within the readiness timeout`), processes)
      } else {
        this.waiting = true
      }
      return null
    }
    return readiness.record
  }

  async veriff(): Promise<void> {
    const { veriff, connector } = this.service
    const sessions = (this.row.parameters.sessions ?? []) as ResolvedSession[]
    // Sessions that provide earlier processes first: a process's dependency (identity's profile) is then settled.
    const first = (session: ResolvedSession) => Math.min(...session.processes.map((process) => INGESTION_PROCESSES.indexOf(process)))
    const bySource = [...sessions].sort((a, b) => first(a) - first(b))
    const integrations = (await connector.integrationsFor(this.row.organization_id, 'veriff')) ?? []
    for (const session of bySource) {
      // The processes this session is the source of, still open.
      const mine = this.open(this.processes.filter((process) => sessionFor(sessions, process) === session))
      if (mine.length === 0) continue
      const integration = integrations.find((candidate) => candidate.name === session.integrationName)
      if (!veriff || !integration) {
        await this.failOpen(fail('workflow_error', 'fetch-provider-data', `Integration "${session.integrationName}" is no longer in the Veriff configuration`), mine)
        continue
      }
      const credentials: VeriffCredentials = { apiKey: integration.apiKey, sharedSecretKey: integration.sharedSecretKey }
      const record = await this.readiness(mine, () => veriff.read(credentials, session.sessionId), 'veriff')
      if (record) await this.apply(mine, record, 'veriff', (file) => veriff.download(credentials, file))
    }
  }

  async sumsub(): Promise<void> {
    const { sumsub } = this.service
    if (!sumsub) {
      await this.failOpen(fail('workflow_error', 'fetch-provider-data', 'Sumsub ingestions are no longer configured for this deployment'))
      return
    }
    let applicantId = this.state.applicantId
    if (applicantId === undefined) {
      try {
        applicantId = await sumsub.importApplicant(String(this.row.parameters.shareToken))
      } catch (error) {
        if (!(error instanceof ProviderClientError)) throw error
        await this.failOpen(fail('sumsub_client_error', 'fetch-provider-data', error.message, { status: error.status }))
        return
      }
      this.row = await this.service.rememberApplicant(this.row, applicantId)
    }
    const record = await this.readiness(this.processes, () => sumsub.read(applicantId), 'sumsub')
    if (record) await this.apply(this.processes, record, 'sumsub', (file) => sumsub.download(file))
  }

  /** Imports each open process from what the provider verified, in the API's order, so that dependencies go first. */
  private async apply(processes: readonly IngestionProcess[], record: ProviderRecord, provider: IngestionProvider, download: (file: ProviderFile) => ReturnType<VeriffSource['download']>): Promise<void> {
    for (const process of ordered(processes)) {
      if (this.results[resultKey(process)]?.status !== 'processing') continue
      const dependency = DEPENDS_ON[process]
      if (dependency !== undefined && this.processes.includes(dependency)) {
        const status = this.results[resultKey(dependency)]?.status
        if (status === 'processing') continue
        if (status === 'failed') {
          await this.settle(process, { status: 'failed', error: fail('dependent_process_failed', 'update-kyc-process', `The ${dependency} process failed, so ${process} was not imported`).failure })
          continue
        }
      }
      try {
        await this.settle(process, await this.importProcess(process, record, provider, download))
      } catch (error) {
        if (!(error instanceof ProcessFailure)) throw error
        await this.settle(process, { status: 'failed', error: error.failure })
      }
    }
  }

  private async importProcess(process: IngestionProcess, record: ProviderRecord, provider: IngestionProvider, download: (file: ProviderFile) => ReturnType<VeriffSource['download']>): Promise<ProcessResult> {
    const title = PROVIDER_TITLES[provider]
    const data = dataFor(record, process)
    if (data === null) throw fail('provider_data_not_available', 'fetch-provider-data', `The ${process} data is not available in ${title}`)
    const files = process === 'identity' || process === 'proof-of-address' ? await this.download(process, record, title, download) : undefined
    const principal: Principal = {
      organizationId: this.row.organization_id,
      clientId: '00000000-0000-0000-0000-000000000000',
      scopes: new Set(),
      subject: 'user:individual',
      userId: this.row.user_id,
    }
    const { kyc } = this.service
    const invalid = (what: string) => fail('provider_data_invalid', 'fetch-provider-data', `The ${what} ${title} holds is not one Tessera can record`)
    const call = async (work: () => Promise<unknown>) => {
      try {
        await work()
      } catch (error) {
        if (!(error instanceof DomainError)) throw error
        const reasons = (error.details?.reasons as string[] | undefined) ?? undefined
        if (error.code === 'operation_not_allowed' || error.code === 'entity_not_found') {
          throw fail('operation_not_allowed', 'update-kyc-process', error.message, reasons ? { reasons } : undefined)
        }
        throw fail('provider_data_invalid', 'update-kyc-process', error.message, definedOnly({ code: error.code, property: error.details?.property }))
      }
    }
    switch (process) {
      case 'profile': {
        const profile = record.profile!
        const birthplace = profile.birthplace?.town && profile.birthplace.country ? { town: profile.birthplace.town, country: profile.birthplace.country } : undefined
        const body = { input: definedOnly({ fullName: profile.fullName, birthdate: profile.birthdate, birthplace, primaryCitizenship: profile.primaryCitizenship }) }
        if (!acceptable(UpdateProfileBody, body)) throw invalid('profile')
        await call(() => kyc.updateProfile(principal, body as UpdateProfileBody))
        return { status: 'completed', data: profile }
      }
      case 'address': {
        const address = record.address!
        const residence = (await kyc.statusesFor(this.row.organization_id, this.row.user_id)).address.residenceCountry as string | null
        if (address.country !== undefined && residence !== null && address.country !== residence) {
          throw fail('provider_data_invalid', 'update-kyc-process', `The address ${title} holds is in ${address.country}; the user lives in ${residence}, and the country of residence cannot change`)
        }
        const body = { input: { address: definedOnly({ subdivision: address.subdivision, city: address.city, line1: address.line1, line2: address.line2, postalCode: address.postalCode }) } }
        if (!acceptable(UpdateAddressBody, body)) throw invalid('address')
        await call(() => kyc.updateAddress(principal, body as UpdateAddressBody))
        return { status: 'completed', data: address }
      }
      case 'identity': {
        const identity = record.identity!
        const { document, person } = identity
        const body = {
          type: 'document-submission',
          input: { media: files!.map((file) => ({ context: file.context, fileId: file.id })) },
          output: {
            provider: title,
            document: document && definedOnly({ type: document.type, number: document.number, country: document.country, expiresAt: document.expiresAt }),
            person: person && definedOnly({ givenName: person.givenName, familyName: person.familyName, birthdate: person.birthdate, gender: person.gender }),
            verifiedAt: identity.verifiedAt,
          },
        }
        if (!acceptable(UpdateIdentityBody, body)) throw invalid('identity document')
        await this.applyOnce(process, () => call(() => kyc.updateIdentity(principal, body as UpdateIdentityBody)))
        return { status: 'completed', data: identity, files }
      }
      case 'proof-of-address': {
        const proof = record.proofOfAddress!
        const body = {
          type: 'document-submission',
          input: { media: files!.map((file) => ({ context: file.context, fileId: file.id })) },
          output: { provider: title, person: proof.person, verifiedAt: proof.verifiedAt },
        }
        if (!acceptable(UpdateProofOfAddressBody, body)) throw invalid('proof of address')
        await this.applyOnce(process, () => call(() => kyc.updateProofOfAddress(principal, body as UpdateProofOfAddressBody)))
        return { status: 'completed', data: proof, files }
      }
    }
  }

  /**
   * Sends a document process's update once: the update refuses a process already `ok`, so a run after a crash
   * that finds its own earlier update applied (the process `ok`) takes it as done.
   */
  private async applyOnce(process: 'identity' | 'proof-of-address', update: () => Promise<void>): Promise<void> {
    if (this.state.applying?.includes(process)) {
      const statuses = await this.service.kyc.statusesFor(this.row.organization_id, this.row.user_id)
      if (statuses[process].status === 'ok') return
    }
    this.row = await this.service.save(this.row, { state: { ...this.state, applying: [...(this.state.applying ?? []), process] } })
    await update()
  }

  private async download(process: 'identity' | 'proof-of-address', record: ProviderRecord, title: string, download: (file: ProviderFile) => ReturnType<VeriffSource['download']>) {
    const wanted = record.files.filter((file) => file.process === process)
    if (wanted.length === 0) throw fail('provider_data_not_available', 'fetch-provider-data', `${title} holds no document of the ${process.replace(/-/g, ' ')}`)
    const kept = []
    for (const file of wanted) {
      try {
        const content = await download(file)
        const stored = await this.service.files.keep(this.row.organization_id, this.row.user_id, {
          id: fileIdOf(this.row.id, file),
          category: file.category,
          contentType: content.contentType || file.contentType,
          content: content.content,
        })
        kept.push({ id: stored.id, category: file.category, context: file.context, contentType: content.contentType || file.contentType, size: stored.size, providerDetails: file.providerDetails })
      } catch (error) {
        if (error instanceof ProviderClientError) {
          throw fail('provider_file_download_failed', 'download-provider-files', `A file could not be downloaded from ${title}: ${error.message}`, { ...file.providerDetails })
        }
        if (error instanceof DomainError) {
          throw fail('provider_file_download_failed', 'download-provider-files', `A file from ${title} could not be kept: ${error.message}`, { ...file.providerDetails, code: error.code })
        }
        throw error
      }
    }
    return kept
  }

  /** Finishes the ingestion when every process has its outcome; otherwise, when to look again. */
  async finishOrWait(): Promise<JobDeferral | null> {
    if (allSettled(this.results, this.processes)) {
      this.row = await this.service.save(this.row, { event: 'finish', finishedAt: new Date() })
      return null
    }
    const { recheckMs, readinessTimeoutMs } = this.service.settings
    const deadline = this.row.started_at!.getTime() + readinessTimeoutMs
    const next = Math.min(Date.now() + recheckMs, deadline)
    return new JobDeferral(new Date(Math.max(next, Date.now())), this.waiting ? 'waiting for the provider\'s decision' : 'waiting for a dependency')
  }
}

