/// <reference lib="dom" />
/**
 * Tessera's hosted payment widget: the page the widget SDK frames (`GET /hosted/payment-widget/`).
 * Protocol: post `{type:'load'}` to the parent, take the session from its `init` answer, post `{type:'ready'}`, then
 * exactly one of `complete`, `cancel` or `error`, always to the host's origin.
 */
import './style.css'
import { Api } from './api.ts'
import { runAuthorize } from './authorize.ts'
import { h } from './dom.ts'
import { Host, logger, type Logger } from './host.ts'
import { runSelect } from './select.ts'
import { refusalText } from './text.ts'
import { applyAppearance, applyColours, Layout } from './ui.ts'
import type { CurrentSessionResponse, Flow, WidgetError, WidgetOptions } from './types.ts'

const FLOWS: readonly Flow[] = ['authorize', 'select-for-deposit', 'select-for-withdrawal']

function apiBase(): string {
  const meta = document.querySelector<HTMLMetaElement>('meta[name="tessera-api-base"]')?.content
  return meta && meta.trim() !== '' ? meta.trim() : location.origin
}

function objectOrUndefined<T>(value: unknown): T | undefined {
  return typeof value === 'object' && value !== null ? (value as T) : undefined
}

async function start(init: Record<string, unknown>, host: Host, hostOrigin: string, layout: Layout, log: Logger): Promise<void> {
  const options = objectOrUndefined<WidgetOptions>(init.options) ?? {}
  applyAppearance(options.theme?.appearance)
  applyColours(objectOrUndefined(options.theme))
  log('Debug mode is enabled.')
  log('Session received from', hostOrigin)

  const refuse = (error: WidgetError) => {
    host.error(error)
    layout.setState('error')
    layout.setStatus('')
    layout.showError(refusalText(error.code, error.message, error.details))
  }

  if (typeof init.token !== 'string' || init.token === '') {
    refuse({ code: 'session_invalid', message: 'The widget session has no token' })
    return
  }
  const api = new Api(apiBase(), init.token)
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
  if (domain !== undefined && new URL(hostOrigin).hostname.toLowerCase() !== domain.toLowerCase()) {
    log(`Refused: the session is for ${domain}, the host page is ${hostOrigin}.`)
    host.silence()
    layout.setState('error')
    layout.setStatus('')
    layout.showError('This payment cannot be made from this website.')
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

function main(): void {
  const container = document.getElementById('app') ?? document.body
  const layout = new Layout(container)
  layout.setState('loading')
  applyAppearance(new URLSearchParams(location.search).get('theme_appearance'))

  if (window.parent === window) {
    layout.setState('standalone')
    layout.setTitle('Tessera payment widget')
    layout.content.append(
      h('p', { id: 'standalone', class: 'pw-note' }, 'This page is meant to be shown inside a website or an app: open it through the widget SDK (PaymentWidget.mountIframe).'),
    )
    return
  }

  layout.setTitle('Payment')
  layout.setStatus('Loading…')
  let started = false
  window.addEventListener('message', (event: MessageEvent) => {
    if (started || event.source !== window.parent) return
    const data = objectOrUndefined<Record<string, unknown>>(event.data)
    if (data?.type !== 'init') return
    // An opaque origin ('null') cannot be answered without '*': such a host gets nothing.
    if (event.origin === 'null' || event.origin === '') return
    started = true
    const log = logger(objectOrUndefined<WidgetOptions>(data.options)?.debug === true)
    const host = new Host(event.origin, log)
    start(data, host, event.origin, layout, log).catch((error: unknown) => {
      log('Unexpected failure:', error instanceof Error ? error.message : String(error))
      if (host.error({ code: 'widget_error', message: 'The payment widget failed unexpectedly' })) {
        layout.removeCancel()
        layout.setState('error')
        layout.showError('Something went wrong. Please close this window and try again.')
      }
    })
  })
  window.parent.postMessage({ type: 'load' }, '*')
}

main()
