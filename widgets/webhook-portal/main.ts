/// <reference lib="dom" />
/**
 * Tessera's webhook portal (`GET /hosted/webhooks/`): where an organization manages its webhook endpoints, their
 * signing secrets and their deliveries. It opens with a management link (`#link=…`, from
 * `POST /core/webhooks/management-link`), exchanged once for a portal session that this tab keeps in
 * `sessionStorage`; the link leaves the address bar at once. Every call then carries the session's token, and a
 * session that ends (401) puts everything away. Server data is only ever written as text.
 */
import './style.css'
import { h } from '../shared/dom.ts'
import { Layout } from '../shared/ui.ts'
import { apiBase, openSession, PortalApi } from './api.ts'
import { catalogueView } from './catalogue.ts'
import { endpointView } from './endpoint.ts'
import { endpointsView } from './endpoints.ts'
import { forgetSession, linkFromFragment, storedSession, storeSession, stripFragment } from './session.ts'
import { linkRefusalText, NO_LINK_TEXT, refusalText, sessionEndedText, timeText } from './text.ts'
import { button, time, type PortalContext, type State, type View } from './ui.ts'
import type { PortalSession, WidgetError } from './types.ts'

const layout = new Layout<State>(document.getElementById('app') ?? document.body)
layout.root.classList.add('wp-frame')

/** Nothing of the organization stays on the page: only the banner saying why, and what to do. */
function refuse(state: State, text: string): void {
  layout.content.replaceChildren()
  layout.root.querySelector('.wp-nav')?.remove()
  layout.setState(state)
  layout.setStatus('')
  layout.showError(text)
  layout.alert.focus()
}

/** The session of this page: the link's, exchanged now (once), or the one this tab already holds. */
async function session(): Promise<PortalSession | undefined> {
  const link = linkFromFragment()
  stripFragment()
  const base = apiBase()
  if (link === undefined) {
    const stored = storedSession()
    if (!stored) refuse('refused', NO_LINK_TEXT)
    return stored
  }
  // A new link replaces whatever session this tab held.
  forgetSession()
  layout.setStatus('Opening the portal…')
  const opened = await openSession(base, link)
  if (opened.kind === 'aborted') return undefined
  if (opened.kind !== 'ok') {
    refuse('refused', linkRefusalText(opened.error))
    return undefined
  }
  storeSession(opened.body.session)
  return opened.body.session
}

function open(current: PortalSession): void {
  let ended = false
  const end = (error: WidgetError) => {
    if (ended) return
    ended = true
    forgetSession()
    refuse('ended', sessionEndedText(error))
  }
  const api = new PortalApi(apiBase(), current.token, end)
  // The session ends at `expiresAt` whatever the page does; say so then rather than at the next click.
  const remaining = Date.parse(current.expiresAt) - Date.now()
  if (remaining > 0 && remaining < 2 ** 31 - 1) setTimeout(() => end({ code: 'token_expired' }), remaining)

  const tabs: Record<'endpoints' | 'catalogue', HTMLButtonElement> = { endpoints: button('Endpoints'), catalogue: button('Event catalogue') }
  const nav = h(
    'nav',
    { class: 'wp-nav', 'aria-label': 'Portal' },
    tabs.endpoints,
    tabs.catalogue,
    h('p', { class: 'wp-hint wp-session' }, 'Session ends at ', time(current.expiresAt, timeText(current.expiresAt)), '.'),
  )

  const context: PortalContext = {
    api,
    layout,
    catalogue: [],
    navigate(view: View) {
      if (ended) return
      layout.clearError()
      for (const [name, tab] of Object.entries(tabs)) {
        const selected = name === view.name || (name === 'endpoints' && view.name === 'endpoint')
        if (selected) tab.setAttribute('aria-current', 'page')
        else tab.removeAttribute('aria-current')
      }
      const shown = view.name === 'catalogue' ? catalogueView(context) : view.name === 'endpoint' ? endpointView(context, view.id) : endpointsView(context)
      layout.content.replaceChildren(shown.element)
      shown.focus.focus()
    },
  }
  tabs.endpoints.addEventListener('click', () => context.navigate({ name: 'endpoints' }))
  tabs.catalogue.addEventListener('click', () => context.navigate({ name: 'catalogue' }))

  void api.eventTypes().then((result) => {
    if (result.kind === 'aborted') return
    if (result.kind !== 'ok') {
      layout.setState('error')
      layout.setStatus('')
      layout.showError(refusalText(result.error))
      return
    }
    context.catalogue = result.body.eventTypes
    layout.root.querySelector('.w-header')!.after(nav)
    layout.setState('portal')
    layout.setStatus('')
    context.navigate({ name: 'endpoints' })
  })
}

layout.setTitle('Webhooks')
layout.setState('loading')
layout.alert.tabIndex = -1
void session().then(
  (current) => {
    if (current) open(current)
  },
  () => refuse('refused', 'The webhook portal failed unexpectedly. Reload the page, or open a new management link.'),
)
