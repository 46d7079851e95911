import { h } from '../shared/dom.ts'
import type { Host, Logger } from '../shared/host.ts'
import type { Api, ApiResult } from './api.ts'
import { fiat, networkName, proofFailureText, QUESTIONS, refusalText, requestFailureText, signingInfo } from './text.ts'
import type { Layout } from './ui.ts'
import type { AddressLookup, Counterparty, CurrentSession, Flow, Proof, RequestForInformation, TransferPayload, ValidateRequest, Violation, WidgetError } from './types.ts'

export interface FormContext {
  tessera: Api
  node: Api
  host: Host
  layout: Layout
  log: Logger
  flow: Flow
  current: CurrentSession
  /** Aborts every request of the widget, under way or to come. */
  abort(): void
}

type Who = 'self' | 'natural' | 'legal'
type Method = 'signature' | 'declaration'
type FieldKey = 'who' | 'firstName' | 'lastName' | 'legalName' | 'method' | 'signature' | 'publicKey' | 'declaration'

const NAME_LIMIT = 100
const LEGAL_NAME_LIMIT = 200
const LOOKUPS = 5
const ANSWER_PATH = '/widgets/travel-rule/sessions/current/request-for-information'

/** An error line under a control (or a group), wired to it with `aria-describedby`. */
interface Slot {
  /** What is marked invalid and focused. */
  control: HTMLElement
  /** What carries `aria-describedby` (the control, or the group's fieldset). */
  described: HTMLElement
  error: HTMLParagraphElement
  hint?: string
}

function errorLine(id: string): HTMLParagraphElement {
  return h('p', { id: `${id}-error`, class: 'w-field-error', hidden: true })
}

function textField(id: string, label: string, attributes: Record<string, string | boolean>, hint?: string): { row: HTMLElement; input: HTMLInputElement; slot: Slot } {
  const input = h('input', { id, name: id, type: 'text', spellcheck: 'false', ...attributes, ...(hint ? { 'aria-describedby': `${id}-hint` } : {}) })
  const error = errorLine(id)
  const row = h('div', { class: 'w-field' }, h('label', { for: id }, label), hint ? h('p', { id: `${id}-hint`, class: 'tw-hint' }, hint) : null, input, error)
  return { row, input, slot: { control: input, described: input, error, ...(hint ? { hint: `${id}-hint` } : {}) } }
}

function radio(name: string, id: string, value: string, label: string, description?: string): { row: HTMLElement; input: HTMLInputElement } {
  const input = h('input', { id, name, type: 'radio', value, ...(description ? { 'aria-describedby': `${id}-description` } : {}) })
  const row = h(
    'div',
    { class: 'tw-choice' },
    input,
    h('label', { for: id }, h('span', { class: 'tw-choice-label' }, label), description ? h('span', { id: `${id}-description`, class: 'tw-choice-description' }, description) : null),
  )
  return { row, input }
}

/** Where a violation of Tessera's answer (`data.…`) or of the node's request belongs in the form. */
function fieldsOf(property: string | undefined, who: Who | undefined): FieldKey[] {
  const p = (property ?? '').replace(/^\//, '').replaceAll('/', '.')
  if (p === 'counterparty.firstName') return ['firstName']
  if (p === 'counterparty.lastName') return ['lastName']
  if (p === 'counterparty.name') return ['legalName']
  if (p === 'data.proof.confirmed' || p === 'proof.confirmed') return ['declaration']
  if (p === 'data.proof.publicKey' || p === 'proof.publicKey') return ['publicKey']
  if (p.startsWith('data.proof') || p.startsWith('proof')) return ['signature']
  if (p.startsWith('data.ivms101') || p === 'counterparty') return who === 'natural' ? ['firstName', 'lastName'] : who === 'legal' ? ['legalName'] : ['who']
  return []
}

/**
 * The form of both flows: who the other party is (the user themself, a person or a company), their names, or for
 * the user's own wallet a proof (a message signed with the address's key, or a self-declaration where the amount
 * allows it). What the user gives goes to the travel-rule node (`POST /transfers/validate`), which describes the
 * transfer in the network's terms; that description answers the request for information at Tessera. The outcome
 * (accepted or refused) ends the widget with `complete`.
 */
export function runForm(context: FormContext): void {
  const { tessera, node, host, layout, log, flow, current } = context
  const request = current.requestForInformation
  const parameters = current.session.data.parameters
  const transaction = parameters.transaction
  const network = request.context.network
  const asset = request.context.asset
  const addresses = request.context.addresses
  const address = addresses[0]!
  const signing = signingInfo(network)
  const texts = QUESTIONS[flow]
  const proofs = parameters.options.proofs ?? {}
  const deminimis = proofs.deminimis
  const declarationOffered = (proofs.fallbacks ?? []).includes('self-declaration')
  const declarationBelowThreshold = deminimis?.proofTypes?.includes('self-declaration') === true && typeof deminimis.threshold === 'number'
  const price = transaction.assetPrice
  const value = typeof price?.price === 'number' && price.currency !== undefined && price.currency === deminimis?.currency ? transaction.amountDecimal * price.price : undefined
  const signatureNeeded = declarationBelowThreshold && value !== undefined && value >= deminimis!.threshold!
  let stopped = false
  let sending = false

  const stop = () => {
    stopped = true
    context.abort()
    layout.removeCancel()
  }

  const fail = (error: WidgetError) => {
    if (stopped) return
    log('Unrecoverable:', error.code)
    stop()
    host.error(error)
    layout.content.replaceChildren()
    layout.showFailure(refusalText(error))
  }

  // --- The movement -------------------------------------------------------------------------------------------

  const lookups = h('ul', { id: 'addresses', class: 'tw-addresses', 'aria-label': texts.addresses })
  for (const [index, each] of addresses.entries()) {
    lookups.append(
      h(
        'li',
        { 'data-address': each },
        h('code', { class: 'tw-address' }, each),
        h('span', { id: `vasp-${index}`, class: 'tw-vasp', 'data-vasp': 'pending', 'aria-live': 'polite' }, index >= LOOKUPS ? '' : 'Looking it up…'),
      ),
    )
  }
  const amount = `${request.context.amount} ${asset}`
  const summary = h(
    'dl',
    { id: 'summary', class: 'tw-summary' },
    h('dt', {}, 'Amount'),
    h('dd', { id: 'amount' }, h('strong', {}, amount), value !== undefined && deminimis?.currency ? h('span', { class: 'w-note' }, ` (about ${fiat(value, deminimis.currency)})`) : null),
    h('dt', {}, 'Network'),
    h('dd', { id: 'network' }, networkName(network)),
    h('dt', {}, texts.addresses),
    h('dd', {}, lookups),
  )

  // --- Who ----------------------------------------------------------------------------------------------------

  const self = radio('who', 'who-self', 'self', 'Me (my own wallet)', flow === 'deposit-form' ? 'I sent it from a wallet of mine.' : 'It goes to a wallet of mine.')
  const natural = radio('who', 'who-natural', 'natural', 'A person', flow === 'deposit-form' ? 'Someone else sent it.' : 'It goes to someone else.')
  const legal = radio('who', 'who-legal', 'legal', 'A company', flow === 'deposit-form' ? 'A company or organization sent it.' : 'It goes to a company or organization.')
  const whoError = errorLine('who')
  const whoSet = h('fieldset', { id: 'who', class: 'tw-group' }, h('legend', { id: 'question', class: 'tw-legend' }, texts.question), self.row, natural.row, legal.row, whoError)
  const whoInputs = [self.input, natural.input, legal.input]

  const firstName = textField('first-name', 'First name', { autocomplete: 'off', maxlength: String(NAME_LIMIT) })
  const lastName = textField('last-name', 'Last name', { autocomplete: 'off', maxlength: String(NAME_LIMIT) })
  const naturalFields = h('div', { id: 'natural-fields', class: 'tw-section', hidden: true }, h('div', { class: 'tw-row' }, firstName.row, lastName.row))
  const legalName = textField('legal-name', 'Company name', { autocomplete: 'off', maxlength: String(LEGAL_NAME_LIMIT) }, 'Its full legal name.')
  const legalFields = h('div', { id: 'legal-fields', class: 'tw-section', hidden: true }, legalName.row)

  // --- The user's own wallet: a proof -------------------------------------------------------------------------

  const signatureChoice = radio('method', 'proof-signature', 'signature', 'Sign a message with this wallet', 'The strongest proof: your wallet signs the message below with the key of the address.')
  const declarationText = signatureNeeded
    ? `Not for this amount: at or above ${fiat(deminimis!.threshold!, deminimis!.currency ?? 'USD')} a signed message is needed.`
    : declarationBelowThreshold
      ? `For amounts below ${fiat(deminimis!.threshold!, deminimis!.currency ?? 'USD')} only; at or above it, a signed message is needed.`
      : 'Where your wallet cannot sign messages.'
  const declarationChoice = radio('method', 'proof-declaration', 'declaration', 'Confirm that the wallet is mine', declarationText)
  if (signatureNeeded) declarationChoice.input.disabled = true
  const methodError = errorLine('method')
  const methodSet = h('fieldset', { id: 'proof', class: 'tw-group' }, h('legend', { class: 'tw-legend' }, 'How do you show that the wallet is yours?'), signatureChoice.row, declarationOffered ? declarationChoice.row : null, methodError)

  const message = h('textarea', { id: 'message', class: 'tw-message', readonly: true, rows: '3', 'aria-describedby': 'message-hint' })
  message.value = current.messageToSign
  const copy = h('button', { id: 'copy-message', type: 'button', class: 'w-button w-secondary' }, 'Copy message')
  copy.addEventListener('click', () => {
    navigator.clipboard.writeText(current.messageToSign).then(
      () => layout.setStatus('Message copied.'),
      () => {
        message.focus()
        message.select()
        layout.setStatus('Select the message and copy it.')
      },
    )
  })
  const signature = h('textarea', { id: 'signature', name: 'signature', rows: '3', spellcheck: 'false', autocomplete: 'off', 'aria-describedby': 'signature-hint' })
  const signatureErrorLine = errorLine('signature')
  const signatureSlot: Slot = { control: signature, described: signature, error: signatureErrorLine, hint: 'signature-hint' }
  const publicKey = textField('public-key', 'Public key', { autocomplete: 'off', maxlength: '200' }, 'The public key of the address, in hexadecimal, as your wallet shows it.')
  const signatureFields = h(
    'div',
    { id: 'signature-fields', class: 'tw-section' },
    h(
      'div',
      { class: 'w-field' },
      h('label', { for: 'message' }, 'Message to sign'),
      h('p', { id: 'message-hint', class: 'tw-hint' }, `Sign it with the key of ${address}, exactly as written.`),
      message,
      h('div', { class: 'tw-actions' }, copy),
    ),
    h('div', { class: 'w-field' }, h('label', { for: 'signature' }, 'Signature'), h('p', { id: 'signature-hint', class: 'tw-hint' }, signing.hint), signature, signatureErrorLine),
    signing.needsPublicKey ? publicKey.row : null,
  )

  const declaration = h('input', { id: 'declaration', name: 'declaration', type: 'checkbox' })
  const declarationError = errorLine('declaration')
  const declarationFields = h(
    'div',
    { id: 'declaration-fields', class: 'tw-section', hidden: true },
    h('div', { class: 'tw-check' }, declaration, h('label', { for: 'declaration' }, `I confirm that I control ${texts.self}, ${address}, and that it is mine.`)),
    declarationError,
  )
  const vaspNote = h('p', { id: 'vasp-note', class: 'w-note', hidden: true })
  const selfFields = h('div', { id: 'self-fields', class: 'tw-section', hidden: true }, methodSet, vaspNote, signatureFields, declarationFields)

  const formError = h('p', { id: 'form-error', class: 'w-alert', role: 'alert', tabindex: '-1', hidden: true })
  const submit = h('button', { id: 'submit', type: 'submit', class: 'w-button' }, 'Send')
  const form = h(
    'form',
    { id: 'travel-rule-form', class: 'tw-form', novalidate: true, 'aria-labelledby': 'question' },
    whoSet,
    naturalFields,
    legalFields,
    selfFields,
    formError,
    h('div', { class: 'tw-actions' }, submit),
  )

  const slots: Record<FieldKey, Slot> = {
    who: { control: self.input, described: whoSet, error: whoError },
    firstName: firstName.slot,
    lastName: lastName.slot,
    legalName: legalName.slot,
    method: { control: signatureChoice.input, described: methodSet, error: methodError },
    signature: signatureSlot,
    publicKey: publicKey.slot,
    declaration: { control: declaration, described: declaration, error: declarationError },
  }

  const who = (): Who | undefined => whoInputs.find((input) => input.checked)?.value as Who | undefined
  const method = (): Method | undefined => (signatureChoice.input.checked ? 'signature' : declarationChoice.input.checked ? 'declaration' : undefined)

  const show = () => {
    const chosen = who()
    naturalFields.hidden = chosen !== 'natural'
    legalFields.hidden = chosen !== 'legal'
    selfFields.hidden = chosen !== 'self'
    const proof = method()
    signatureFields.hidden = proof !== 'signature'
    declarationFields.hidden = proof !== 'declaration'
  }
  for (const input of [...whoInputs, signatureChoice.input, declarationChoice.input]) input.addEventListener('change', show)

  const clearSlot = (slot: Slot) => {
    slot.error.hidden = true
    slot.error.textContent = ''
    slot.control.removeAttribute('aria-invalid')
    if (slot.hint) slot.described.setAttribute('aria-describedby', slot.hint)
    else slot.described.removeAttribute('aria-describedby')
  }
  const clearErrors = () => {
    for (const slot of Object.values(slots)) clearSlot(slot)
    formError.hidden = true
    formError.textContent = ''
  }
  for (const slot of Object.values(slots)) slot.control.addEventListener('input', () => clearSlot(slot))

  /** Shows each error under its field (the first focused), and what belongs to no field above the button. */
  const showErrors = (errors: Partial<Record<FieldKey, string>>, general?: string) => {
    let first: HTMLElement | undefined
    for (const [key, text] of Object.entries(errors) as [FieldKey, string][]) {
      const slot = slots[key]
      slot.error.textContent = text
      slot.error.hidden = false
      slot.control.setAttribute('aria-invalid', 'true')
      slot.described.setAttribute('aria-describedby', [slot.hint, slot.error.id].filter(Boolean).join(' '))
      first ??= slot.control
    }
    if (general !== undefined) {
      formError.textContent = general
      formError.hidden = false
    }
    if (first) first.focus()
    else if (general !== undefined) formError.focus()
  }

  /** What the user gave, checked here first: the node and Tessera check it again. */
  const collect = (): { counterparty: Counterparty; proof?: Proof } | Partial<Record<FieldKey, string>> => {
    const chosen = who()
    if (chosen === undefined) return { who: flow === 'deposit-form' ? 'Choose who sent this deposit.' : 'Choose who receives this withdrawal.' }
    if (chosen === 'natural') {
      const first = firstName.input.value.trim()
      const last = lastName.input.value.trim()
      const errors: Partial<Record<FieldKey, string>> = {}
      if (first === '') errors.firstName = 'Enter their first name.'
      if (last === '') errors.lastName = 'Enter their last name.'
      if (first.length > NAME_LIMIT) errors.firstName = `At most ${NAME_LIMIT} characters.`
      if (last.length > NAME_LIMIT) errors.lastName = `At most ${NAME_LIMIT} characters.`
      return Object.keys(errors).length > 0 ? errors : { counterparty: { type: 'natural', firstName: first, lastName: last } }
    }
    if (chosen === 'legal') {
      const name = legalName.input.value.trim()
      if (name === '') return { legalName: 'Enter the company\'s name.' }
      if (name.length > LEGAL_NAME_LIMIT) return { legalName: `At most ${LEGAL_NAME_LIMIT} characters.` }
      return { counterparty: { type: 'legal', name } }
    }
    const proof = method()
    if (proof === undefined) return { method: 'Choose how you show that the wallet is yours.' }
    if (proof === 'declaration') {
      if (!declaration.checked) return { declaration: 'Tick the box to confirm that the wallet is yours.' }
      return { counterparty: { type: 'self' }, proof: { type: 'self-declaration', confirmed: true } }
    }
    const signed = signature.value.trim()
    const key = publicKey.input.value.trim()
    const errors: Partial<Record<FieldKey, string>> = {}
    if (signed === '') errors.signature = 'Paste the signature your wallet gave.'
    if (signing.needsPublicKey && key === '') errors.publicKey = 'Enter the public key of the address.'
    if (Object.keys(errors).length > 0) return errors
    return { counterparty: { type: 'self' }, proof: { type: signing.schemeOf(signed), attestation: current.messageToSign, proof: signed, ...(signing.needsPublicKey ? { publicKey: key } : {}) } }
  }

  /** A signature is needed after all: the self-declaration is no longer offered. */
  const requireSignature = (text: string) => {
    declarationChoice.input.checked = false
    declarationChoice.input.disabled = true
    signatureChoice.input.checked = true
    show()
    showErrors({ method: text })
  }

  const finish = (payload: TransferPayload, answered: RequestForInformation, counterparty: Counterparty) => {
    if (stopped) return
    log('Answered:', answered.status)
    stop()
    host.complete(payload, { requestForInformation: answered })
    const accepted = answered.status === 'ok'
    const party = counterparty.type === 'self' ? 'you, from a wallet of your own' : counterparty.type === 'natural' ? `${counterparty.firstName} ${counterparty.lastName}` : counterparty.name
    const next = accepted
      ? flow === 'deposit-form'
        ? 'Your deposit will now be released to your account.'
        : 'You can now confirm your withdrawal.'
      : flow === 'deposit-form'
        ? 'This deposit cannot be credited to your account.'
        : 'This withdrawal cannot be made.'
    layout.content.replaceChildren(
      summary,
      h(
        'div',
        { id: 'outcome', class: 'tw-outcome', 'data-status': answered.status },
        h('h2', { class: 'tw-subtitle' }, accepted ? 'Thank you' : 'Not accepted'),
        h('p', {}, accepted ? `The information was accepted: ${flow === 'deposit-form' ? 'sent by' : 'received by'} ${party}.` : `The information was not accepted: ${requestFailureText(answered.statusDetails?.reason)}.`),
        h('p', {}, next),
      ),
    )
    layout.setState('done')
    layout.setStatus(accepted ? 'Information accepted.' : 'Information not accepted.')
    layout.title.focus()
  }

  /** A refusal of the node or of Tessera that the user can act on, shown in the form; anything else ends the widget. */
  const explain = (result: Exclude<ApiResult<unknown>, { kind: 'ok' } | { kind: 'aborted' }>, chosen: Who) => {
    if (result.kind === 'offline') {
      showErrors({}, `${result.error.message ?? 'The service cannot be reached.'}`)
      return
    }
    const { status, error } = result
    const details = error.details ?? {}
    const reasons = Array.isArray(details.reasons) ? (details.reasons as unknown[]).map(String) : []
    if (status === 401 || status === 403 || status === 404) return fail(error)
    if (status === 409 && reasons.includes('request-for-information-update-not-allowed')) return fail(error)
    if (status === 409 && reasons.includes('signature-proof-required')) return requireSignature('For this amount, a confirmation is not enough: sign the message with your wallet.')
    if (status === 409 && reasons.includes('proof-invalid')) return showErrors({ signature: proofFailureText(details.reason) })
    if (status === 400 && error.code === 'request_invalid') {
      const violations = Array.isArray(details.violations) ? (details.violations as Violation[]) : []
      const errors: Partial<Record<FieldKey, string>> = {}
      for (const violation of violations) {
        for (const key of fieldsOf(violation.property, chosen)) {
          errors[key] ??= key === 'signature' ? 'Check the signature.' : key === 'publicKey' ? 'Check the public key.' : key === 'declaration' ? 'Tick the box to confirm.' : key === 'who' ? 'Check your answer.' : 'Check this name.'
        }
      }
      return showErrors(errors, Object.keys(errors).length === 0 ? 'Please check your answers.' : undefined)
    }
    if (status === 429) return showErrors({}, 'Too many attempts. Wait a moment, then send again.')
    if (status === 503) return showErrors({}, 'The travel-rule network cannot be reached right now. Wait a moment, then send again.')
    showErrors({}, `${(error.message ?? 'The information could not be sent').replace(/\.$/, '')}.`)
  }

  async function send(): Promise<void> {
    if (stopped || sending) return
    clearErrors()
    const collected = collect()
    if (!('counterparty' in collected)) {
      showErrors(collected as Partial<Record<FieldKey, string>>)
      return
    }
    const chosen = who()!
    sending = true
    submit.disabled = true
    form.setAttribute('aria-busy', 'true')
    layout.setState('sending')
    layout.setStatus('Checking with the travel-rule network…')
    const done = () => {
      sending = false
      submit.disabled = false
      form.removeAttribute('aria-busy')
      if (!stopped) layout.setState('form')
    }
    try {
      const body: ValidateRequest = {
        direction: request.context.direction,
        network,
        asset,
        amountDecimal: transaction.amountDecimal,
        address,
        customer: transaction.customer,
        counterparty: collected.counterparty,
        ...(collected.proof ? { proof: collected.proof } : {}),
      }
      log('Validating the transfer at the node:', collected.counterparty.type)
      const validated = await node.post<TransferPayload>('/transfers/validate', body)
      if (stopped || validated.kind === 'aborted') return
      if (validated.kind !== 'ok') {
        layout.setStatus('')
        explain(validated, chosen)
        return
      }
      const payload = validated.body
      if (payload.valid !== true) {
        layout.setStatus('')
        const errors = Array.isArray(payload.errors) ? payload.errors.map(String) : []
        showErrors({}, errors.length > 0 ? `${errors.join('. ')}.` : 'The travel-rule network could not use this information.')
        return
      }
      layout.setStatus('Sending…')
      log('Answering the request for information.')
      const answered = await tessera.put<{ requestForInformation: RequestForInformation }>(ANSWER_PATH, { data: payload })
      if (stopped || answered.kind === 'aborted') return
      if (answered.kind !== 'ok') {
        layout.setStatus('')
        explain(answered, chosen)
        return
      }
      finish(payload, answered.body.requestForInformation, collected.counterparty)
    } finally {
      done()
    }
  }

  form.addEventListener('submit', (event) => {
    event.preventDefault()
    send().catch((failure: unknown) => {
      log('Unexpected failure:', failure instanceof Error ? failure.message : String(failure))
      fail({ code: 'widget_error', message: 'The travel-rule widget failed unexpectedly' })
    })
  })

  async function lookUp(index: number, each: string): Promise<void> {
    const line = lookups.querySelector<HTMLElement>(`#vasp-${index}`)!
    const found = await node.get<AddressLookup>(`/addresses/${encodeURIComponent(network)}/${encodeURIComponent(each)}`)
    if (stopped || found.kind === 'aborted') return
    if (found.kind !== 'ok') {
      line.dataset.vasp = 'unknown'
      line.textContent = 'Could not be looked up.'
      return
    }
    const entry = found.body.vasp
    line.dataset.vasp = entry ? entry.did : 'none'
    line.textContent = entry ? `Hosted by ${entry.name}` : 'Not known to the travel-rule directory: a self-hosted wallet, or a service it does not list.'
    if (index === 0 && entry) {
      vaspNote.textContent = `This address is at ${entry.name}. Wallets held at an exchange often cannot sign messages${declarationOffered && !signatureNeeded ? ': confirm instead.' : '.'}`
      vaspNote.hidden = false
    }
  }

  layout.setTitle(texts.title)
  layout.addCancel(() => {
    if (stopped) return
    log('Cancelled by the user.')
    stop()
    host.cancel()
    layout.content.replaceChildren(h('p', { id: 'outcome', class: 'w-note', 'data-status': 'cancelled' }, 'Cancelled. Nothing was sent.'))
    layout.clearError()
    layout.setState('cancelled')
    layout.setStatus('Cancelled.')
  })
  layout.content.replaceChildren(summary, form)
  show()
  layout.setState('form')
  layout.setStatus(flow === 'deposit-form' ? 'Tell us who sent this deposit.' : 'Tell us who receives this withdrawal.')
  host.ready()
  for (const [index, each] of addresses.slice(0, LOOKUPS).entries()) {
    lookUp(index, each).catch((failure: unknown) => log('Lookup failed:', failure instanceof Error ? failure.message : String(failure)))
  }
}
