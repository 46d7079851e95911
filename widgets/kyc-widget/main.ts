/// <reference lib="dom" />
/**
 * Tessera's hosted KYC widget: the page the widget SDK's `KycWidget` frames (`GET /hosted/kyc-widget/`).
 * Protocol (shared/host.ts): post `{type:'load'}` to the parent, take the session from its `init` answer (from the
 * parent window only), post `{type:'ready'}`, then exactly one of `complete`, `cancel` or `error`, always to the
 * host's origin. The session's processes are walked in order (profile, identity, proof of address), one step each.
 */
import './style.css'
import { h } from '../shared/dom.ts'
import { runWidget, type Session } from '../shared/host.ts'
import { apiBase, KycApi } from './api.ts'
import { runDocuments } from './documents.ts'
import { runProfile } from './profile.ts'
import type { StepContext } from './step.ts'
import { failureText, PROCESS_NAMES, refusalText, STATUS_NAMES } from './text.ts'
import { Layout } from './ui.ts'
import type { CurrentSession, KycProcess, ProcessOutcome, ProcessView, WidgetError } from './types.ts'

/** Whether the user has something to submit for the process: a pending profile, a document pending or rejected. */
function toSubmit(process: KycProcess, view: ProcessView): boolean {
  return process === 'profile' ? view.status === 'pending' : view.status === 'pending' || view.status === 'failed'
}

function outcomeOf(process: KycProcess, view: ProcessView): ProcessOutcome {
  const reason = view.status === 'failed' ? view.output?.reason : undefined
  return { code: process, status: view.status, ...(typeof reason === 'string' ? { reason } : {}) }
}

async function start(layout: Layout, { init, host, log }: Session): Promise<void> {
  let stopped = false
  const token = typeof init.token === 'string' && init.token !== '' ? init.token : undefined
  const api = token === undefined ? undefined : new KycApi(apiBase(), token)
  const stop = () => {
    stopped = true
    api?.abort()
    layout.removeCancel()
  }
  const fail = (error: WidgetError) => {
    if (stopped) return
    stop()
    host.error(error)
    layout.content.replaceChildren()
    layout.showFailure(refusalText(error))
  }

  if (!api) {
    fail({ code: 'session_invalid', message: 'The widget session has no token' })
    return
  }
  const current = await api.get<CurrentSession>('/widgets/kyc/sessions/current')
  if (current.kind === 'aborted') return
  if (current.kind !== 'ok') {
    log('The session could not be read:', current.error.code)
    fail(current.error)
    return
  }
  const { session, processes: views, uploads } = current.body
  if (session.flow !== 'verify') {
    fail({ code: 'session_invalid', message: `The widget does not handle the flow ${String(session.flow)}` })
    return
  }
  const order = session.data.processes.filter((process) => views[process] !== undefined)
  log('Processes', order.join(', '))

  layout.setTitle('Verify your identity')
  layout.setState('step')
  layout.setSteps(order)
  for (const process of order) layout.markStep(process, views[process]!.status)
  layout.addCancel(() => {
    if (stopped) return
    log('Cancelled by the user.')
    stop()
    host.cancel()
    layout.content.replaceChildren(h('p', { id: 'outcome', class: 'w-note' }, 'Verification cancelled. Nothing more was sent.'))
    layout.clearError()
    layout.setState('cancelled')
    layout.setStatus('Cancelled.')
  })

  const context: StepContext = { api, layout, log, stopped: () => stopped, fail }
  for (const process of order) {
    const view = views[process]!
    if (!toSubmit(process, view)) continue
    layout.clearError()
    layout.markStep(process, view.status, true)
    const rule = process === 'profile' ? undefined : uploads[process]
    if (process !== 'profile' && !rule) {
      fail({ code: 'session_invalid', message: `The session does not say what ${process} takes` })
      return
    }
    const step = process === 'profile' ? runProfile(context, view) : runDocuments(context, process, view, rule!)
    // The first step is on screen: the user can act.
    host.ready()
    const after = await step
    if (stopped) return
    views[process] = after
    layout.markStep(process, after.status)
  }
  if (stopped) return

  const outcomes = order.map((process) => outcomeOf(process, views[process]!))
  log('Complete:', outcomes.map((outcome) => `${outcome.code} ${outcome.status}`).join(', '))
  stop()
  host.ready()
  host.complete({ processes: outcomes })
  layout.clearError()
  layout.setState('done')
  layout.setStatus(order.length === 0 ? 'Nothing left to verify.' : 'Thank you: your verification is submitted.')
  layout.showStep(
    h('h2', { id: 'step-title', class: 'kw-subtitle' }, order.length === 0 ? 'Nothing to do' : 'All submitted'),
    h(
      'ul',
      { id: 'summary', class: 'kw-summary', 'aria-labelledby': 'step-title' },
      ...outcomes.map((outcome) =>
        h(
          'li',
          { 'data-process': outcome.code, 'data-status': outcome.status },
          h('span', { class: 'kw-summary-name' }, PROCESS_NAMES[outcome.code]),
          h('span', { class: 'kw-summary-status' }, outcome.status === 'failed' ? `${STATUS_NAMES.failed}: ${failureText(outcome.reason)}` : STATUS_NAMES[outcome.status]),
        ),
      ),
    ),
  )
}

const layout = new Layout(document.getElementById('app') ?? document.body)
runWidget({
  layout,
  logName: 'kyc widget frame',
  // Its messages carry where each check stands and why one failed: debug lines show only their type.
  logPayloads: false,
  standalone: { title: 'Tessera KYC widget', sdkClass: 'KycWidget' },
  title: 'Verify your identity',
  failure: 'The KYC widget failed unexpectedly',
  start: (session) => start(layout, session),
})
