/// <reference lib="dom" />
/**
 * Tessera's hosted travel-rule widget: the page the widget SDK's `TravelRuleWidget` frames
 * (`GET /hosted/travel-rule-widget/`). Protocol (shared/host.ts): post `{type:'load'}` to the parent, take the session
 * from its `init` answer (from the parent window only), post `{type:'ready'}`, then exactly one of `complete`,
 * `cancel` or `error`, always to the host's origin. The form (form.ts) describes the other party of a held crypto
 * deposit (`deposit-form`) or of a withdrawal about to be made (`withdrawal-form`).
 */
import './style.css'
import { foreignDomain, objectOrUndefined, runWidget, type Session } from '../shared/host.ts'
import { applyAppearance, applyColours, Layout } from '../shared/ui.ts'
import { Api, apiBase, apiPolicy } from './api.ts'
import { runForm } from './form.ts'
import { refusalText } from './text.ts'
import type { State } from './ui.ts'
import type { CurrentSession, Flow, WidgetError } from './types.ts'

const FLOWS: readonly Flow[] = ['deposit-form', 'withdrawal-form']

/** The node's URL, when it is an http(s) URL (the page's CSP decides where it may actually connect). */
function nodeBase(url: unknown): string | undefined {
  if (typeof url !== 'string') return undefined
  try {
    const parsed = new URL(url)
    return parsed.protocol === 'https:' || parsed.protocol === 'http:' ? parsed.href : undefined
  } catch {
    return undefined
  }
}

async function start(layout: Layout<State>, { init, options, host, hostOrigin, log }: Session): Promise<void> {
  const abort = new AbortController()
  const refuse = (error: WidgetError) => {
    abort.abort()
    host.error(error)
    layout.showFailure(refusalText(error))
  }

  if (typeof init.token !== 'string' || init.token === '') {
    refuse({ code: 'session_invalid', message: 'The widget session has no token' })
    return
  }
  const tessera = new Api(apiBase(), init.token, apiPolicy('The travel-rule service', abort))
  const current = await tessera.get<CurrentSession>('/widgets/travel-rule/sessions/current')
  if (current.kind === 'aborted') return
  if (current.kind !== 'ok') {
    log('The session could not be read:', current.error.code)
    refuse(current.error)
    return
  }
  const { session, requestForInformation } = current.body

  if (foreignDomain(session.domain, hostOrigin)) {
    log(`Refused: the session is for ${session.domain}, the host page is ${hostOrigin}.`)
    abort.abort()
    host.silence()
    layout.showFailure('This form cannot be used from this website.')
    return
  }
  if (!FLOWS.includes(session.flow)) {
    refuse({ code: 'session_invalid', message: `The widget does not handle the flow ${String(session.flow)}` })
    return
  }
  const theme = objectOrUndefined<Record<string, unknown>>(session.data.parameters.options.theme)
  if (options.theme?.appearance === undefined && new URLSearchParams(location.search).get('theme_appearance') === null) applyAppearance(theme?.appearance)
  if (options.theme === undefined) applyColours(theme)
  log('Flow', session.flow, 'request', requestForInformation.status)

  if (requestForInformation.status !== 'pending') {
    refuse({
      code: 'operation_not_allowed',
      message: requestForInformation.status === 'expired' ? 'The request for information has expired' : 'The request for information was already answered',
      details: { reasons: ['request-for-information-update-not-allowed'], status: requestForInformation.status },
    })
    return
  }
  const base = nodeBase(session.data.parameters.init.nodeUrl)
  if (base === undefined || requestForInformation.context.addresses.length === 0) {
    refuse({ code: 'session_invalid', message: base === undefined ? 'The session does not say where the travel-rule network is' : 'The transfer has no address to describe' })
    return
  }
  const node = new Api(base, session.data.parameters.init.authToken, apiPolicy('The travel-rule network', abort))
  runForm({ tessera, node, host, layout, log, flow: session.flow, current: current.body, abort: () => abort.abort() })
}

const layout = new Layout<State>(document.getElementById('app') ?? document.body)
runWidget({
  layout,
  logName: 'travel rule widget frame',
  // Its messages carry the other party's names and the wallet's proof: debug lines show only their type.
  logPayloads: false,
  standalone: { title: 'Tessera travel-rule widget', sdkClass: 'TravelRuleWidget' },
  title: 'Travel rule',
  failure: 'The travel-rule widget failed unexpectedly',
  start: (session) => start(layout, session),
})
