import type { Principal } from '../../http/principal.ts'
import { notFound, operationNotAllowed } from '../../lib/errors.ts'
import type { FilesService } from '../files/index.ts'
import { KYC_PROCESSES, type KycService } from '../kyc/index.ts'
import type { SessionSigner } from './widgets.service.ts'
import { KYC_WIDGET_PROCESSES, type CreateKycWidgetSessionBody, type KycWidgetProcess } from './kyc-sessions.schemas.ts'

/** What the hosted page calls for each process (`core.kyc:read` too, for the session's own view of them). */
const PROCESS_SCOPES: Record<KycWidgetProcess, readonly string[]> = {
  profile: ['core.kyc.profile:update'],
  // Documents are uploaded as files first (the upload form itself needs no token).
  identity: ['core.files:create', 'core.kyc.identity:update'],
  'proof-of-address': ['core.files:create', 'core.kyc.proof-of-address:update'],
}
const READ_SCOPE = 'core.kyc:read'

/** The files each document process takes from the widget: what `PATCH /core/kyc/processes/{process}` accepts. */
const DOCUMENTS = {
  identity: {
    category: 'image',
    media: [
      { context: 'photo-document-front', required: true },
      { context: 'photo-document-back', required: false },
      { context: 'photo-selfie', required: true },
    ],
  },
  'proof-of-address': { category: 'document', media: [{ context: 'address-proof', required: true }] },
} as const

export interface KycWidgetSettings {
  publicUrl: string
  sessionTtlSeconds: number
  /** Whether this deployment checks identity and proof of address itself (a KYC provider is configured): the widget needs it. */
  enabled: boolean
}

interface ProcessView {
  code: string
  status: string
  verification?: { model?: string }
  [field: string]: unknown
}

const isWidgetProcess = (value: string): value is KycWidgetProcess => (KYC_WIDGET_PROCESSES as readonly string[]).includes(value)

/** Whether the user still has something to submit for the process (what the widget does when no processes are named). */
function toSubmit(process: KycWidgetProcess, view: ProcessView): boolean {
  return process === 'profile' ? view.status === 'pending' : view.status === 'pending' || view.status === 'failed'
}

/** A document the client verified itself (partner-verified): the widget, whose submissions the service checks, cannot take it over. */
function partnerVerified(view: ProcessView): boolean {
  return view.status === 'ok' && view.verification?.model === 'partner-verified'
}

/**
 * KYC widget sessions: a short-lived token for one individual user and the KYC processes the hosted KYC widget
 * walks them through (profile, identity, proof of address), and the page that runs it. The client's server creates
 * the session; the widget in the user's browser then submits the processes with the session's token alone.
 */
export class KycWidgetSessionsService {
  private readonly signer: SessionSigner
  private readonly kyc: Pick<KycService, 'overview'>
  private readonly files: Pick<FilesService, 'listSettings'>
  private readonly settings: KycWidgetSettings

  constructor(deps: { signer: SessionSigner; kyc: Pick<KycService, 'overview'>; files: Pick<FilesService, 'listSettings'>; settings: KycWidgetSettings }) {
    this.signer = deps.signer
    this.kyc = deps.kyc
    this.files = deps.files
    this.settings = deps.settings
  }

  /** The page of the KYC widget (the frame the SDK loads). */
  get kycWidgetUrl(): string {
    return `${this.settings.publicUrl}/hosted/kyc-widget/`
  }

  private async views(principal: Principal): Promise<Record<KycWidgetProcess, ProcessView>> {
    const { body } = await this.kyc.overview(principal, [], undefined)
    const processes = body.processes as unknown as Record<string, ProcessView>
    return Object.fromEntries(KYC_WIDGET_PROCESSES.map((process) => [process, processes[KYC_PROCESSES[process]]!])) as Record<KycWidgetProcess, ProcessView>
  }

  async createSession(principal: Principal, body: CreateKycWidgetSessionBody): Promise<{ flow: 'verify'; data: { processes: KycWidgetProcess[] }; url: string; token: string }> {
    if (principal.userId === null) throw notFound('user')
    if (!this.settings.enabled) throw operationNotAllowed('The KYC widget is not enabled for your organization', ['permission-denied'])
    const views = await this.views(principal)
    const requested = body.processes
    const processes = requested
      ? KYC_WIDGET_PROCESSES.filter((process) => requested.includes(process))
      : KYC_WIDGET_PROCESSES.filter((process) => toSubmit(process, views[process]))

    for (const process of processes) {
      if (process !== 'profile' && partnerVerified(views[process])) {
        throw operationNotAllowed(`Service-verified '${process}' is required to perform this operation`, [`service-verified-${process}-required`])
      }
    }
    // Documents are checked against the declared profile: it must be complete first, or be completed in the widget before them.
    const blocked = processes.find((process) => process !== 'profile' && toSubmit(process, views[process]))
    if (blocked !== undefined && views.profile.status !== 'ok' && !processes.includes('profile')) {
      throw operationNotAllowed(`User cannot submit '${blocked}' due to incomplete process dependencies`, ['incomplete-profile'])
    }

    const wanted = new Set([READ_SCOPE, ...processes.flatMap((process) => PROCESS_SCOPES[process])])
    const token = await this.signer.sign({
      clientId: principal.clientId,
      organizationId: principal.organizationId,
      // Never more than the client's own token holds.
      scopes: [...wanted].filter((scope) => principal.scopes.has(scope)),
      ttlSeconds: this.settings.sessionTtlSeconds,
      userId: principal.userId,
      widget: { kind: 'kyc', flow: 'verify', processes: [...processes] },
    })
    return { flow: 'verify', data: { processes: [...processes] }, url: this.kycWidgetUrl, token }
  }

  /**
   * The session the calling widget runs, from its token, with the session's processes as they are now and what
   * their documents take: 404 `entity_not_found` (entity `session`) for any other token.
   */
  async currentSession(principal: Principal) {
    const widget = principal.widget
    if (widget?.kind !== 'kyc') throw notFound('session')
    const processes = (widget.processes ?? []).filter(isWidgetProcess)
    const views = await this.views(principal)
    const settings = this.files.listSettings(['image', 'document'])
    const uploads: Record<string, unknown> = {}
    for (const process of processes) {
      if (process === 'profile') continue
      const { category, media } = DOCUMENTS[process]
      const { allowedContentTypes, minFileSize, maxFileSize } = settings[category]!
      uploads[process] = { category, allowedContentTypes, minFileSize, maxFileSize, media: media.map((item) => ({ ...item })) }
    }
    return {
      session: { flow: 'verify' as const, data: { processes }, expiresAt: new Date(widget.expiresAt * 1000).toISOString() },
      processes: Object.fromEntries(processes.map((process) => [process, views[process]])),
      uploads,
    }
  }
}
