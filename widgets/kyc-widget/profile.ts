import { h } from '../shared/dom.ts'
import { fatal, Fields, setBusy, type StepContext } from './step.ts'
import { countryList, countryName, PROCESS_NAMES, refusalText } from './text.ts'
import type { FieldRule, ProfileInput, ProfileView, WidgetError } from './types.ts'

/** The profile's fields the widget asks for, by the property of `input` each fills (as the API's violations name them). */
const PROPERTIES: Record<string, string> = {
  'input.fullName': 'full-name',
  'input.birthdate': 'birthdate',
  'input.primaryCitizenship': 'citizenship',
  'input.birthplace': 'birthplace-country',
  'input.birthplace.country': 'birthplace-country',
  'input.birthplace.town': 'birthplace-town',
  'input.address': 'address-line1',
  'input.address.line1': 'address-line1',
  'input.address.line2': 'address-line2',
  'input.address.city': 'address-city',
  'input.address.postalCode': 'address-postal-code',
}

const FIELD_NAMES: Record<string, string> = {
  'full-name': 'your full name',
  birthdate: 'your date of birth',
  citizenship: 'your citizenship',
  'birthplace-country': 'your country of birth',
  'birthplace-town': 'your town of birth',
  'address-line1': 'the first line of your address',
  'address-line2': 'the second line of your address',
  'address-city': 'your city',
  'address-postal-code': 'your postal code',
}

/** The rules the API gives when a view has none (the profile's own, docs/kyc.md). */
const DEFAULT_RULES: Record<string, FieldRule> = {
  fullName: { presence: 'required', editable: true },
  birthdate: { presence: 'required', editable: true },
  birthplace: { presence: 'optional', editable: true, rules: { country: { presence: 'required', editable: true }, town: { presence: 'required', editable: true } } },
  primaryCitizenship: { presence: 'required', editable: true },
  address: {
    presence: 'required',
    editable: true,
    rules: { city: { presence: 'required', editable: true }, line1: { presence: 'required', editable: true }, line2: { presence: 'optional', editable: true }, postalCode: { presence: 'required', editable: true } },
  },
}

const asked = (rule: FieldRule | undefined): rule is FieldRule => rule !== undefined && rule.presence !== 'disallowed' && rule.editable

function countrySelect(id: string, selected: string | undefined, autocomplete: string): HTMLSelectElement {
  const select = h('select', { id, name: id, autocomplete })
  select.append(h('option', { value: '' }, 'Choose a country'))
  for (const country of countryList()) select.append(h('option', { value: country.code, selected: country.code === selected }, country.name))
  return select
}

function textInput(id: string, value: string | undefined, attributes: Record<string, string> = {}): HTMLInputElement {
  const input = h('input', { id, name: id, type: 'text', spellcheck: 'false', ...attributes })
  input.value = value ?? ''
  return input
}

/** The fields named by a refusal of `PATCH /core/kyc/processes/profile`, with what to say about each. */
function explain(error: WidgetError): { fields: [string, string][]; text: string } {
  const details = error.details ?? {}
  const property = typeof details.property === 'string' ? PROPERTIES[details.property] : undefined
  switch (error.code) {
    case 'request_invalid': {
      const violations = Array.isArray(details.violations) ? (details.violations as { property?: unknown }[]) : []
      const ids = [...new Set(violations.map((violation) => PROPERTIES[String(violation.property)]).filter((id): id is string => id !== undefined))]
      return { fields: ids.map((id) => [id, `Please check ${FIELD_NAMES[id]}.`]), text: ids.length > 0 ? 'Please check the highlighted fields.' : refusalText(error) }
    }
    case 'date_invalid':
      return { fields: [['birthdate', 'You must be between 18 and 100 years old.']], text: 'Please check your date of birth.' }
    case 'country_not_supported':
      return { fields: property ? [[property, 'This country is not supported.']] : [], text: 'A country you chose is not supported.' }
    case 'po_boxes_not_allowed':
      return { fields: [['address-line1', 'A PO box is not accepted: enter the address where you live.']], text: 'PO boxes are not accepted.' }
    default:
      return { fields: [], text: refusalText(error) }
  }
}

/**
 * The profile step: what the user declares about themselves (full name, date of birth, citizenship, place of birth,
 * address of residence), asked as the profile's `verification.rules` say, prefilled with what is already declared.
 * Resolves with the profile once `PATCH /core/kyc/processes/profile` made it complete (`ok`).
 */
export function runProfile(context: StepContext, view: ProfileView): Promise<ProfileView> {
  const { api, layout, log } = context
  const rules = view.verification?.rules ?? DEFAULT_RULES
  const input: ProfileInput = view.input ?? {}
  const fields = new Fields()
  const form = h('form', { id: 'profile-form', class: 'kw-form', novalidate: true, 'aria-labelledby': 'step-title' })

  if (asked(rules.fullName)) {
    form.append(fields.row(textInput('full-name', input.fullName, { autocomplete: 'name', maxlength: '200' }), 'Full legal name', { hint: 'As on your identity document: your given names, then your family name.' }))
  }
  if (asked(rules.birthdate)) {
    const birthdate = h('input', { id: 'birthdate', name: 'birthdate', type: 'date', autocomplete: 'bday' })
    birthdate.value = input.birthdate ?? ''
    form.append(fields.row(birthdate, 'Date of birth', { optional: rules.birthdate.presence !== 'required' }))
  }
  if (asked(rules.primaryCitizenship)) {
    form.append(fields.row(countrySelect('citizenship', input.primaryCitizenship, 'country'), 'Citizenship', { optional: rules.primaryCitizenship.presence !== 'required' }))
  }
  const birthplaceRule = rules.birthplace
  if (asked(birthplaceRule)) {
    const optional = birthplaceRule.presence !== 'required'
    form.append(
      h(
        'fieldset',
        { class: 'kw-group' },
        h('legend', {}, 'Place of birth', optional ? h('span', { class: 'kw-optional' }, ' (optional)') : null),
        fields.row(countrySelect('birthplace-country', input.birthplace?.country, 'off'), 'Country of birth', { optional: true, quiet: true }),
        fields.row(textInput('birthplace-town', input.birthplace?.town, { autocomplete: 'off', maxlength: '100' }), 'Town of birth', { optional: true, quiet: true }),
      ),
    )
  }
  const addressRule = rules.address
  const addressRules = addressRule?.rules ?? {}
  if (asked(addressRule)) {
    const address = input.address
    const line = (key: 'line1' | 'line2' | 'city' | 'postalCode', id: string, label: string, autocomplete: string, maxlength: string) =>
      asked(addressRules[key]) ? fields.row(textInput(id, address?.[key], { autocomplete, maxlength }), label, { optional: addressRules[key].presence !== 'required' }) : null
    const group = h(
      'fieldset',
      { class: 'kw-group' },
      h('legend', {}, 'Address where you live'),
      address?.country ? h('p', { id: 'address-country', class: 'kw-hint' }, `Country: ${countryName(address.country)}`) : null,
    )
    for (const row of [
      line('line1', 'address-line1', 'Address line 1', 'address-line1', '150'),
      line('line2', 'address-line2', 'Address line 2', 'address-line2', '100'),
      line('city', 'address-city', 'City', 'address-level2', '100'),
      line('postalCode', 'address-postal-code', 'Postal code', 'postal-code', '20'),
    ]) {
      if (row) group.append(row)
    }
    form.append(group)
  }

  const submit = h('button', { id: 'profile-submit', type: 'submit', class: 'w-button' }, 'Save and continue')
  form.append(submit)

  const guidance = 'Check your details, then continue.'
  layout.setStatus(guidance)
  form.addEventListener('input', () => layout.setStatus(guidance))
  layout.showStep(
    h('h2', { id: 'step-title', class: 'kw-subtitle' }, PROCESS_NAMES.profile),
    h('p', { class: 'w-note' }, 'Tell us who you are. We check your documents against these details.'),
    form,
  )

  /** The update, or null (with the fields in error marked) when something required is missing. */
  function body(): { input: Record<string, unknown> } | null {
    fields.clearErrors()
    const change: Record<string, unknown> = {}
    const requiredOf = (id: string, rule: FieldRule | undefined) => fields.has(id) && rule?.presence === 'required'
    const missing = (id: string, rule: FieldRule | undefined) => requiredOf(id, rule) && fields.value(id) === ''
    for (const [id, rule] of [
      ['full-name', rules.fullName],
      ['birthdate', rules.birthdate],
      ['citizenship', rules.primaryCitizenship],
      ['address-line1', addressRules.line1],
      ['address-city', addressRules.city],
      ['address-postal-code', addressRules.postalCode],
    ] as const) {
      if (missing(id, rule)) fields.setError(id, `Enter ${FIELD_NAMES[id]}.`)
    }
    const fullName = fields.value('full-name')
    if (fullName !== '' && !/^\S+\s+\S+/.test(fullName)) fields.setError('full-name', 'Enter your given names and your family name.')
    const birthplaceCountry = fields.value('birthplace-country')
    const birthplaceTown = fields.value('birthplace-town')
    if (birthplaceCountry === '' && birthplaceTown !== '') fields.setError('birthplace-country', `Enter ${FIELD_NAMES['birthplace-country']}, or leave the place of birth empty.`)
    if (birthplaceCountry !== '' && birthplaceTown === '') fields.setError('birthplace-town', `Enter ${FIELD_NAMES['birthplace-town']}, or leave the place of birth empty.`)
    if (birthplaceRule?.presence === 'required' && birthplaceCountry === '' && birthplaceTown === '') fields.setError('birthplace-country', `Enter ${FIELD_NAMES['birthplace-country']}.`)
    if (fields.focusFirstInvalid()) return null

    if (fullName !== '') change.fullName = fullName.replace(/\s+/g, ' ')
    if (fields.value('birthdate') !== '') change.birthdate = fields.value('birthdate')
    if (fields.value('citizenship') !== '') change.primaryCitizenship = fields.value('citizenship')
    if (birthplaceCountry !== '' && birthplaceTown !== '') change.birthplace = { country: birthplaceCountry, town: birthplaceTown }
    const address: Record<string, unknown> = {}
    for (const [key, id] of [['line1', 'address-line1'], ['line2', 'address-line2'], ['city', 'address-city'], ['postalCode', 'address-postal-code']] as const) {
      if (!fields.has(id)) continue
      const value = fields.value(id)
      if (value !== '') address[key] = value
      // A line the user emptied is removed (only the second line may be).
      else if (key === 'line2' && input.address?.line2 !== undefined) address[key] = null
    }
    if (Object.keys(address).length > 0) change.address = address
    return { input: change }
  }

  return new Promise<ProfileView>((resolve) => {
    form.addEventListener('submit', (event) => {
      event.preventDefault()
      save().catch((failure: unknown) => {
        log('Unexpected failure:', failure instanceof Error ? failure.message : String(failure))
        context.fail({ code: 'widget_error', message: 'The KYC widget failed unexpectedly' })
      })
    })

    async function save(): Promise<void> {
      if (context.stopped() || submit.disabled) return
      layout.clearError()
      const update = body()
      if (!update) {
        layout.setStatus('Some details are missing or invalid.')
        return
      }
      setBusy(form, true)
      layout.setStatus('Saving your details…')
      const result = await api.patch<{ profile: ProfileView }>('/core/kyc/processes/profile', update)
      setBusy(form, false)
      if (context.stopped() || result.kind === 'aborted') return
      const refusal = fatal(result)
      if (refusal) {
        context.fail(refusal)
        return
      }
      if (result.kind === 'offline') {
        layout.setStatus('')
        layout.showError(refusalText(result.error))
        return
      }
      if (result.kind === 'refused') {
        const { fields: marked, text } = explain(result.error)
        for (const [id, message] of marked) fields.setError(id, message)
        layout.setStatus('')
        layout.showError(text)
        fields.focusFirstInvalid()
        return
      }
      const profile = result.body.profile
      log('Profile saved:', profile.status)
      if (profile.status !== 'ok') {
        layout.setStatus('')
        layout.showError('Some required details are still missing. Please complete the form.')
        return
      }
      resolve(profile)
    }
  })
}
