import { h } from '../shared/dom.ts'
import type { Host, Logger } from '../shared/host.ts'
import { NETWORK_ERROR, type Api } from './api.ts'
import { failureText, feesText, money, refusalText } from './text.ts'
import type { Layout } from './ui.ts'
import type { Quote, SessionSettings, Transaction, WidgetError } from './types.ts'

const MAX_CONNECTIVITY_FAILURES = 3

interface AuthorizeContext {
  api: Api
  host: Host
  layout: Layout
  log: Logger
  quoteId: string
  quote: Quote | undefined
  settings: SessionSettings
}

/** The URL of a 3-D Secure challenge, when it is one the widget may frame (http or https). */
function challengeUrl(transaction: Transaction): string | undefined {
  const url = transaction.origin?.node?.confirmationUrl
  if (typeof url !== 'string') return undefined
  try {
    const parsed = new URL(url, location.href)
    return parsed.protocol === 'https:' || parsed.protocol === 'http:' ? parsed.href : undefined
  } catch {
    return undefined
  }
}

function quoteSummary(quote: Quote): HTMLElement {
  const row = (term: string, id: string, value: string, note?: string) => [
    h('dt', {}, term),
    h('dd', { id }, h('strong', {}, value), note ? h('span', { class: 'w-note' }, ` ${note}`) : null),
  ]
  return h(
    'dl',
    { id: 'quote-summary', class: 'pw-summary' },
    ...row('You pay', 'pay-amount', money(quote.origin.amount, quote.origin.asset), 'from your card'),
    ...row('You receive', 'receive-amount', money(quote.destination.amount, quote.destination.asset)),
    ...row('Fees', 'fees', feesText(quote.fees)),
  )
}

/**
 * Flow `authorize`: executes the session's quote with a 3-D Secure requirement, shows the issuer's challenge when the
 * transaction asks for one, and polls the transaction until it is final (or the attempts run out).
 */
export async function runAuthorize(context: AuthorizeContext): Promise<void> {
  const { api, host, layout, log, settings } = context
  const interval = Math.max(0, Number(settings.pollIntervalMs) || 0)
  const maxAttempts = Math.max(0, Math.floor(Number(settings.maxPollAttempts) || 0))

  let stopped = false
  let timer: number | undefined
  let attempts = 0
  let connectivityFailures = 0
  let last: Transaction | undefined
  let challengeShown = false
  let frame: HTMLIFrameElement | undefined
  let frameBox: HTMLElement | undefined

  const outcome = h('p', { id: 'outcome', class: 'pw-outcome', hidden: true })

  const removeChallenge = () => {
    frameBox?.remove()
    frameBox = undefined
    frame = undefined
  }

  /** Stops everything: timers, requests, the challenge, the Cancel button and the 3-D Secure listener. */
  const stop = () => {
    stopped = true
    if (timer !== undefined) window.clearTimeout(timer)
    timer = undefined
    api.abort()
    removeChallenge()
    layout.removeCancel()
    window.removeEventListener('message', onReturn)
  }

  const fail = (error: WidgetError) => {
    if (stopped) return
    stop()
    host.error(error)
    layout.showFailure(refusalText(error.code, error.message, error.details))
  }

  const unexpected = (error: unknown) => {
    log('Unexpected failure:', error instanceof Error ? error.message : String(error))
    fail({ code: 'widget_error', message: 'The payment widget failed unexpectedly' })
  }

  const finish = (transaction: Transaction, reason: 'transaction-status-changed' | 'max-retries-reached') => {
    if (stopped) return
    stop()
    host.complete({ transaction, trigger: { reason } })
    layout.setState('done')
    outcome.dataset.status = transaction.status
    outcome.hidden = false
    if (reason === 'max-retries-reached') {
      layout.setStatus('Your payment is still being processed.')
      outcome.textContent = 'It is taking longer than usual: its outcome will be shown in your account.'
    } else if (transaction.status === 'completed') {
      layout.setStatus('Payment completed.')
      outcome.textContent = `You received ${money(transaction.destination.amount, transaction.destination.asset)}.`
    } else {
      layout.setStatus('Payment failed.')
      outcome.textContent = `The payment failed: ${failureText(transaction.statusDetails?.reason)}.`
    }
  }

  const cancel = () => {
    if (stopped) return
    log('Cancelled by the user.')
    stop()
    host.cancel()
    layout.setState('cancelled')
    layout.setStatus('Payment cancelled.')
  }

  function onReturn(event: MessageEvent): void {
    if (stopped || !frame) return
    if (event.origin !== location.origin || event.source !== frame.contentWindow) return
    if ((event.data as { type?: unknown } | null)?.type !== 'tessera:3ds-return') return
    log('Back from the 3-D Secure challenge.')
    removeChallenge()
    layout.setState('confirming')
    layout.setStatus('Confirming your payment…')
  }

  const showChallenge = (url: string) => {
    challengeShown = true
    log('Showing the 3-D Secure challenge.')
    frame = h('iframe', {
      id: 'challenge',
      class: 'pw-challenge',
      title: 'Verify your payment',
      src: url,
      // The challenge may run scripts and submit forms; it may not navigate the page around the widget.
      sandbox: 'allow-scripts allow-forms allow-same-origin',
    })
    frameBox = h('div', { class: 'pw-challenge-box' }, h('h2', { class: 'pw-subtitle' }, 'Verify your payment'), frame)
    layout.content.append(frameBox)
    layout.setState('challenge')
    layout.setStatus('Verify your payment with your card issuer below.')
  }

  /** Reads a state of the transaction: final, a challenge to show, or still under way. Returns whether it is final. */
  const observe = (transaction: Transaction): boolean => {
    last = transaction
    log('Transaction', transaction.id, transaction.status)
    if (transaction.status === 'completed' || transaction.status === 'failed') {
      finish(transaction, 'transaction-status-changed')
      return true
    }
    if (transaction.status === 'processing' && !challengeShown) {
      const url = challengeUrl(transaction)
      if (url !== undefined) showChallenge(url)
    }
    if (transaction.status === 'on-hold' && !frame) layout.setStatus('Your payment is being reviewed…')
    return false
  }

  const schedule = () => {
    if (stopped) return
    if (attempts >= maxAttempts) {
      finish(last!, 'max-retries-reached')
      return
    }
    timer = window.setTimeout(() => {
      poll().catch(unexpected)
    }, interval)
  }

  async function poll(): Promise<void> {
    timer = undefined
    if (stopped) return
    attempts += 1
    const result = await api.get<{ transaction: Transaction }>(`/core/transactions/${encodeURIComponent(last!.id)}`)
    if (stopped || result.kind === 'aborted') return
    if (result.kind === 'ok') {
      connectivityFailures = 0
      if (!observe(result.body.transaction)) schedule()
      return
    }
    if (result.kind === 'offline') {
      connectivityFailures += 1
      log(`Poll ${attempts} failed (no connectivity, ${connectivityFailures} in a row).`)
      if (connectivityFailures >= MAX_CONNECTIVITY_FAILURES) fail(NETWORK_ERROR)
      else schedule()
      return
    }
    if (result.status === 429) {
      schedule()
      return
    }
    fail(result.error)
  }

  layout.setTitle('Confirm your payment')
  if (context.quote) layout.content.append(quoteSummary(context.quote))
  layout.content.append(outcome)
  layout.addCancel(cancel)
  window.addEventListener('message', onReturn)
  layout.setState('authorizing')
  layout.setStatus('Authorizing your payment…')
  host.ready()

  log('Creating the transaction.')
  const created = await api.post<{ transaction: Transaction }>('/core/transactions', {
    quoteId: context.quoteId,
    params: { requirements: [{ name: 'authorize:3ds', returnUrl: settings.returnUrl }] },
  })
  if (stopped || created.kind === 'aborted') return
  if (created.kind !== 'ok') {
    fail(created.error)
    return
  }
  if (!observe(created.body.transaction)) schedule()
}
