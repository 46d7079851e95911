import { clear, h } from '../shared/dom.ts'
import type { Host, Logger } from '../shared/host.ts'
import type { Api } from './api.ts'
import { cardName, expiryText, isCardDetails, refusalText } from './text.ts'
import type { Layout } from './ui.ts'
import type { ExternalAccount, WidgetError } from './types.ts'

type Feature = 'deposit' | 'withdraw'

interface SelectContext {
  api: Api
  host: Host
  layout: Layout
  log: Logger
  flow: 'select-for-deposit' | 'select-for-withdrawal'
}

/** The form's inputs, by the property of the request body they fill (as `details.violations[].property` names it). */
const FIELDS = [
  { property: 'label', id: 'card-label', label: 'Name for this card', attributes: { autocomplete: 'off', maxlength: '140', placeholder: 'My card' } },
  { property: 'number', id: 'card-number', label: 'Card number', attributes: { autocomplete: 'cc-number', inputmode: 'numeric', maxlength: '23', placeholder: '4242 4242 4242 4242' } },
  { property: 'expiryDate.month', id: 'card-expiry-month', label: 'Expiry month', attributes: { autocomplete: 'cc-exp-month', inputmode: 'numeric', maxlength: '2', placeholder: 'MM' } },
  { property: 'expiryDate.year', id: 'card-expiry-year', label: 'Expiry year', attributes: { autocomplete: 'cc-exp-year', inputmode: 'numeric', maxlength: '4', placeholder: 'YYYY' } },
  { property: 'securityCode', id: 'card-security-code', label: 'Security code', attributes: { autocomplete: 'cc-csc', inputmode: 'numeric', maxlength: '3', placeholder: 'CVC' } },
] as const

const FIELD_NAMES: Record<string, string> = {
  label: 'the name for this card',
  number: 'the card number',
  'expiryDate.month': 'the expiry month',
  'expiryDate.year': 'the expiry year',
  expiryDate: 'the expiry date',
  securityCode: 'the security code',
}

const OPERATION_REASONS: Record<string, string> = {
  'card-declined': 'Your bank declined this card. Check the details (and the security code) or try another card.',
  'card-permanently-declined': 'Your bank declined this card permanently. Please use another card.',
  'card-unsupported': 'This card is not supported. Please use another card.',
  'card-issuer-country-mismatch': 'This card was issued in another country than the one you live in. Please use another card.',
  'permission-denied': 'Cards cannot be added here at the moment.',
}

/** The input a violation's property belongs to (`expiryDate` alone is the month's). */
function fieldOf(property: unknown): (typeof FIELDS)[number] | undefined {
  if (typeof property !== 'string') return undefined
  const name = property === 'expiryDate' ? 'expiryDate.month' : property
  return FIELDS.find((field) => field.property === name)
}

/** A refusal of `POST /core/external-accounts`, in words, and the inputs it is about. */
function explainRefusal(error: WidgetError): { text: string; properties: string[] } {
  const details = error.details ?? {}
  switch (error.code) {
    case 'request_invalid': {
      const violations = Array.isArray(details.violations) ? (details.violations as { property?: unknown }[]) : []
      const properties = [...new Set(violations.map((v) => fieldOf(v.property)?.property).filter((p): p is (typeof FIELDS)[number]['property'] => p !== undefined))]
      const names = properties.map((p) => FIELD_NAMES[p]!)
      return {
        text: names.length > 0 ? `Please check ${names.join(', ')}.` : 'Please check the card details.',
        properties,
      }
    }
    case 'number_invalid':
      return { text: 'This card number is not valid. Please check it.', properties: ['number'] }
    case 'date_invalid':
      return { text: 'This card has expired. Please check the expiry date or use another card.', properties: ['expiryDate.month', 'expiryDate.year'] }
    case 'duplicate':
      return { text: 'This card is already in your list.', properties: ['number'] }
    case 'card_type_not_allowed':
      return {
        text: details.type === 'credit' ? 'Credit cards cannot be added for your currency. Please use a debit card.' : 'This type of card cannot be added. Please use another card.',
        properties: ['number'],
      }
    case 'user_capability_failure':
      return { text: 'Your account cannot add this card now: your verification is not complete, or you have reached the number of cards allowed.', properties: [] }
    case 'entity_not_found':
      return { text: 'Cards from this issuer cannot be used in your currency. Please use another card.', properties: ['number'] }
    case 'operation_not_allowed': {
      const reasons = Array.isArray(details.reasons) ? (details.reasons as unknown[]) : []
      const known = reasons.map((reason) => OPERATION_REASONS[String(reason)]).find((text) => text !== undefined)
      return { text: known ?? refusalText(error.code, error.message, error.details), properties: [] }
    }
    default:
      return { text: refusalText(error.code, error.message, error.details), properties: [] }
  }
}

/** Why a card cannot be used for the flow, or undefined when it can. */
function unusableBecause(account: ExternalAccount, feature: Feature): string | undefined {
  if (account.status !== 'ok') return account.status === 'processing' ? 'it is still being verified' : `it is ${account.status}`
  if (account.features.includes(feature)) return undefined
  if (feature === 'deposit') return 'it cannot be used to pay with your account'
  if (isCardDetails(account.details) && account.details.type === 'credit') return 'credit cards cannot receive withdrawals'
  if (isCardDetails(account.details) && account.details.octSupport !== 'supported') return 'its bank does not accept payouts to cards'
  return 'it cannot receive withdrawals with your account'
}

/** `2030` stays, `30` is 2030; anything else is left for the API to refuse. */
function yearOf(text: string): number {
  const year = Number.parseInt(text, 10)
  return /^\d{2}$/.test(text) ? 2000 + year : year
}

/**
 * Flows `select-for-deposit` and `select-for-withdrawal`: the user picks one of their cards that can be used for the
 * flow, or adds one; the card number and security code go only to `POST /core/external-accounts`.
 */
export async function runSelect(context: SelectContext): Promise<void> {
  const { api, host, layout, log, flow } = context
  const feature: Feature = flow === 'select-for-deposit' ? 'deposit' : 'withdraw'
  let stopped = false

  const stop = () => {
    stopped = true
    api.abort()
    layout.removeCancel()
  }

  const fail = (error: WidgetError) => {
    if (stopped) return
    stop()
    host.error(error)
    clear(layout.content)
    layout.showFailure(refusalText(error.code, error.message, error.details))
  }

  const choose = (account: ExternalAccount) => {
    if (stopped) return
    log('Card chosen', account.id)
    stop()
    host.complete({ via: 'external-account', selection: account })
    clear(layout.content)
    layout.content.append(h('p', { id: 'outcome', class: 'pw-outcome', 'data-external-account-id': account.id }, `${account.label} (${cardName(account)}) selected.`))
    layout.setState('done')
    layout.setStatus('Card selected.')
  }

  layout.setTitle(feature === 'deposit' ? 'Choose a card to pay with' : 'Choose a card to receive the money')
  layout.addCancel(() => {
    if (stopped) return
    log('Cancelled by the user.')
    stop()
    host.cancel()
    clear(layout.content)
    layout.setState('cancelled')
    layout.setStatus('Cancelled.')
  })
  layout.setStatus('Loading your cards…')

  const listed = await api.get<{ externalAccounts: ExternalAccount[] }>('/core/external-accounts?type=card&perPage=100')
  if (stopped || listed.kind === 'aborted') return
  if (listed.kind !== 'ok') {
    fail(listed.error)
    return
  }

  // The list of usable cards.
  const list = h('ul', { id: 'cards', class: 'pw-cards', 'aria-label': 'Your cards' })
  const empty = h('p', { id: 'no-cards', class: 'w-note' }, feature === 'deposit' ? 'You have no card to pay with yet: add one below.' : 'You have no card that can receive money yet: add one below.')
  const addToList = (account: ExternalAccount) => {
    const button = h(
      'button',
      { type: 'button', class: 'pw-card', 'data-external-account-id': account.id },
      h('span', { class: 'pw-card-label' }, account.label),
      h('span', { class: 'pw-card-name' }, cardName(account)),
      h('span', { class: 'pw-card-expiry' }, expiryText(account)),
    )
    button.addEventListener('click', () => choose(account))
    list.append(h('li', {}, button))
    empty.hidden = true
  }
  const usable = listed.body.externalAccounts.filter((account) => account.type === 'card' && unusableBecause(account, feature) === undefined)
  for (const account of usable) addToList(account)
  empty.hidden = usable.length > 0

  // The form to add a card.
  const error = h('p', { id: 'add-card-error', class: 'w-alert', role: 'alert', hidden: true })
  const inputs = new Map<string, HTMLInputElement>()
  const rows = FIELDS.map((field) => {
    const input = h('input', { id: field.id, name: field.id, type: 'text', required: true, spellcheck: 'false', autocapitalize: 'off', ...field.attributes })
    input.addEventListener('input', () => {
      input.removeAttribute('aria-invalid')
      input.removeAttribute('aria-describedby')
    })
    inputs.set(field.property, input)
    return h('div', { class: `w-field pw-field-${field.id}` }, h('label', { for: field.id }, field.label), input)
  })
  const submit = h('button', { type: 'submit', id: 'add-card-submit', class: 'w-button' }, 'Add card')
  const form = h(
    'form',
    { id: 'add-card', class: 'pw-form', novalidate: true, 'aria-labelledby': 'add-card-title' },
    h('h2', { id: 'add-card-title', class: 'pw-subtitle' }, 'Add a card'),
    rows[0],
    rows[1],
    h('div', { class: 'pw-row' }, rows[2], rows[3], rows[4]),
    error,
    submit,
  )
  const input = (property: string) => inputs.get(property)!

  const showFormError = (text: string, properties: readonly string[]) => {
    error.textContent = text
    error.hidden = false
    for (const field of inputs.values()) {
      field.removeAttribute('aria-invalid')
      field.removeAttribute('aria-describedby')
    }
    for (const property of properties) {
      inputs.get(property)?.setAttribute('aria-invalid', 'true')
      inputs.get(property)?.setAttribute('aria-describedby', 'add-card-error')
    }
    const first = properties.map((p) => inputs.get(p)).find((field) => field !== undefined)
    first?.focus()
  }

  form.addEventListener('submit', (event) => {
    event.preventDefault()
    addCard().catch((failure: unknown) => {
      log('Unexpected failure:', failure instanceof Error ? failure.message : String(failure))
      fail({ code: 'widget_error', message: 'The payment widget failed unexpectedly' })
    })
  })

  async function addCard(): Promise<void> {
    if (stopped || submit.disabled) return
    error.hidden = true
    error.textContent = ''
    submit.disabled = true
    form.setAttribute('aria-busy', 'true')
    log('Adding a card.')
    const result = await api.post<{ externalAccount: ExternalAccount }>('/core/external-accounts', {
      type: 'card',
      label: input('label').value.trim(),
      number: input('number').value.replace(/[\s-]/g, ''),
      securityCode: input('securityCode').value.trim(),
      expiryDate: { month: Number.parseInt(input('expiryDate.month').value, 10), year: yearOf(input('expiryDate.year').value.trim()) },
    })
    submit.disabled = false
    form.removeAttribute('aria-busy')
    if (stopped || result.kind === 'aborted') return
    if (result.kind === 'ok') {
      input('number').value = ''
      input('securityCode').value = ''
      const account = result.body.externalAccount
      log('Card added', account.id)
      const why = unusableBecause(account, feature)
      if (why === undefined) {
        choose(account)
        return
      }
      form.reset()
      showFormError(`The card was added, but it cannot be used here: ${why}.`, [])
      return
    }
    if (result.kind === 'offline') {
      showFormError('The payment service cannot be reached. Check your connection and try again.', [])
      return
    }
    if (result.status === 401 || result.status === 403) {
      fail(result.error)
      return
    }
    const { text, properties } = explainRefusal(result.error)
    showFormError(text, properties)
  }

  layout.content.append(h('section', { class: 'pw-section', 'aria-labelledby': 'cards-title' }, h('h2', { id: 'cards-title', class: 'pw-subtitle' }, 'Your cards'), list, empty), form)
  layout.setState('select')
  layout.setStatus(usable.length > 0 ? 'Choose a card, or add a new one.' : 'Add a card to continue.')
  host.ready()
}
