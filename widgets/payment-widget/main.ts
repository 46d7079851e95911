/// <reference lib="dom" />
/**
 * Tessera's hosted payment widget: the page the widget SDK frames (`GET /hosted/payment-widget/`).
 * Protocol (shared/host.ts): post `{type:'load'}` to the parent, take the session from its `init` answer, post
 * `{type:'ready'}`, then exactly one of `complete`, `cancel` or `error`, always to the host's origin.
 */
import './style.css'
import { foreignDomain, objectOrUndefined, runWidget, type Session } from '../shared/host.ts'
import { Layout } from '../shared/ui.ts'
import { Api, API_POLICY, apiBase } from './api.ts'
import { runAuthorize } from './authorize.ts'
import { runSelect } from './select.ts'
import { refusalText } from './text.ts'
import type { State } from './ui.ts'
import type { CurrentSessionResponse, Flow, WidgetError } from './types.ts'

const FLOWS: readonly Flow[] = ['authorize', 'select-for-deposit', 'select-for-withdrawal']

async function start(layout: Layout<State>, { init, host, hostOrigin, log }: Session): Promise<void> {
  const refuse = (error: WidgetError) => {
    host.error(error)
    layout.showFailure(refusalText(error.code, error.message, error.details))
  }

  if (typeof init.token !== 'string' || init.token === '') {
    refuse({ code: 'session_invalid', message: 'The widget session has no token' })
    return
  }
  const api = new Api(apiBase(), init.token, API_POLICY)
  const current = await api.get<CurrentSessionResponse>('/widgets/payment/sessions/current')
  if (current.kind === 'aborted') return
  if (current.kind !== 'ok') {
    log('The session could not be read:', current.error.code)
    refuse(current.error)
    return
  }
  const { session, quote, settings } = current.body
  const flow = session?.flow ?? init.flow
  const data = session?.data ?? objectOrUndefined<Record<string, unknown>>(init.data) ?? {}

  const domain = typeof data.domain === 'string' && data.domain !== '' ? data.domain : undefined
  if (foreignDomain(domain, hostOrigin)) {
    log(`Refused: the session is for ${domain}, the host page is ${hostOrigin}.`)
    host.silence()
    layout.showFailure('This payment cannot be made from this website.')
    return
  }

  if (!FLOWS.includes(flow as Flow)) {
    refuse({ code: 'session_invalid', message: `The widget does not handle the flow ${String(flow)}` })
    return
  }
  log('Flow', flow)
  if (flow === 'authorize') {
    const quoteId = typeof data.quoteId === 'string' ? data.quoteId : quote?.id
    if (quoteId === undefined) {
      refuse({ code: 'session_invalid', message: 'The session has no quote to authorize' })
      return
    }
    await runAuthorize({ api, host, layout, log, quoteId, quote, settings })
  } else {
    await runSelect({ api, host, layout, log, flow: flow as 'select-for-deposit' | 'select-for-withdrawal' })
  }
}

const layout = new Layout<State>(document.getElementById('app') ?? document.body)
runWidget({
  layout,
  logName: 'payment widget frame',
  // Debug lines show what is posted (the transaction, the card account chosen); the other widgets' show only the type.
  logPayloads: true,
  standalone: { title: 'Tessera payment widget', sdkClass: 'PaymentWidget' },
  title: 'Payment',
  failure: 'The payment widget failed unexpectedly',
  start: (session) => start(layout, session),
})
