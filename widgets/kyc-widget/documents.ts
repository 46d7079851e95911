import { h } from '../shared/dom.ts'
import { fatal, Fields, setBusy, type StepContext } from './step.ts'
import { failureText, MEDIA_LABELS, PROCESS_NAMES, refusalText, sizeText, typesText } from './text.ts'
import type { CreatedFile, ProcessView, UploadRule, WidgetError } from './types.ts'

type DocumentProcess = 'identity' | 'proof-of-address'

/** The key of the process in the answer of its update. */
const RESPONSE_KEYS: Record<DocumentProcess, string> = { identity: 'identity', 'proof-of-address': 'proofOfAddress' }

const INTRODUCTIONS: Record<DocumentProcess, string> = {
  identity:
    'Upload clear photos of a valid identity document (passport, identity card, driving licence or residence permit) and ' +
    'a photo of your face. We check them against your details.',
  'proof-of-address': 'Upload a recent document that shows your name and the address where you live, such as a utility bill or a bank statement.',
}

/** Why a chosen file cannot be sent, or undefined when it can. */
function fileProblem(file: File, rule: UploadRule): string | undefined {
  if (!rule.allowedContentTypes.includes(file.type)) return `This file is not accepted: choose a ${typesText(rule.allowedContentTypes)} file.`
  if (file.size < rule.minFileSize) return `This file is too small (at least ${sizeText(rule.minFileSize)}).`
  if (file.size > rule.maxFileSize) return `This file is too large (at most ${sizeText(rule.maxFileSize)}).`
  return undefined
}

/**
 * A document step (identity, proof of address): the user chooses the files the process takes (`rule.media`), the
 * widget uploads each (`POST /core/files`, then its signed upload form) and submits them for the service to check
 * (`PATCH /core/kyc/processes/{process}`, `document-submission`). Resolves with the process once it is checked (`ok`,
 * or `running` while the check goes on), or `failed` when the user moves on after a rejection.
 */
export function runDocuments(context: StepContext, process: DocumentProcess, view: ProcessView, rule: UploadRule): Promise<ProcessView> {
  const { api, layout, log } = context
  const fields = new Fields()
  const form = h('form', { id: `${process}-form`, class: 'kw-form', novalidate: true, 'aria-labelledby': 'step-title' })
  const hint = `${typesText(rule.allowedContentTypes)}, ${sizeText(rule.minFileSize)} to ${sizeText(rule.maxFileSize)}.`
  for (const item of rule.media) {
    const input = h('input', { id: `file-${item.context}`, name: item.context, type: 'file', accept: rule.allowedContentTypes.join(','), 'data-context': item.context })
    form.append(fields.row(input, MEDIA_LABELS[item.context] ?? item.context, { hint, optional: !item.required }))
  }
  const submit = h('button', { id: `${process}-submit`, type: 'submit', class: 'w-button' }, 'Submit')
  const skip = h('button', { id: `${process}-skip`, type: 'button', class: 'w-button w-secondary', hidden: true }, 'Continue without it')
  form.append(h('div', { class: 'kw-actions' }, submit, skip))

  const previous = view.status === 'failed' ? h('p', { id: `${process}-previous`, class: 'w-note' }, `Your last submission was not verified: ${failureText(view.output?.reason)}. Please try again.`) : null
  const guidance = `Choose your ${rule.media.length > 1 ? 'files' : 'file'}, then submit.`
  layout.setStatus(guidance)
  form.addEventListener('change', () => layout.setStatus(guidance))
  layout.showStep(...[h('h2', { id: 'step-title', class: 'kw-subtitle' }, PROCESS_NAMES[process]), h('p', { class: 'w-note' }, INTRODUCTIONS[process]), previous, form].filter((node) => node !== null))

  /** The chosen files, by context, or null (with the fields in error marked) when one is missing or unsuitable. */
  function chosen(): { context: string; file: File }[] | null {
    fields.clearErrors()
    const files: { context: string; file: File }[] = []
    for (const item of rule.media) {
      const id = `file-${item.context}`
      const file = fields.control(id).files?.[0]
      if (!file) {
        if (item.required) fields.setError(id, 'Choose a file.')
        continue
      }
      const problem = fileProblem(file, rule)
      if (problem) fields.setError(id, problem)
      else files.push({ context: item.context, file })
    }
    return fields.focusFirstInvalid() ? null : files
  }

  return new Promise<ProcessView>((resolve) => {
    let last: ProcessView = view
    skip.addEventListener('click', () => {
      if (context.stopped()) return
      log(`Moving on without ${process}.`)
      resolve(last)
    })
    form.addEventListener('submit', (event) => {
      event.preventDefault()
      send().catch((failure: unknown) => {
        log('Unexpected failure:', failure instanceof Error ? failure.message : String(failure))
        context.fail({ code: 'widget_error', message: 'The KYC widget failed unexpectedly' })
      })
    })

    /** Shows what went wrong; true when the widget is over instead. */
    const refused = (error: WidgetError, status: number | undefined): boolean => {
      if (status === 401 || status === 403) {
        context.fail(error)
        return true
      }
      layout.setStatus('')
      layout.showError(refusalText(error))
      return false
    }

    async function send(): Promise<void> {
      if (context.stopped() || submit.disabled) return
      layout.clearError()
      const files = chosen()
      if (!files) {
        layout.setStatus('A file is missing or cannot be used.')
        return
      }
      setBusy(form, true)
      try {
        const media: { context: string; fileId: string }[] = []
        for (const [index, { context: mediaContext, file }] of files.entries()) {
          layout.setStatus(`Uploading file ${index + 1} of ${files.length}…`)
          const created = await api.post<CreatedFile>('/core/files', { category: rule.category, contentType: file.type })
          if (context.stopped() || created.kind === 'aborted') return
          if (created.kind !== 'ok') {
            refused(created.error, created.kind === 'refused' ? created.status : undefined)
            return
          }
          const { id, upload } = created.body.file
          const uploaded = await api.upload(upload.url, upload.formData, file)
          if (context.stopped() || uploaded.kind === 'aborted') return
          if (uploaded.kind !== 'ok') {
            // The upload form is signed: its refusals (403 signature_*) are about the form, not the session.
            layout.setStatus('')
            layout.showError(refusalText(uploaded.error))
            return
          }
          media.push({ context: mediaContext, fileId: id })
        }
        layout.setStatus('Checking your documents…')
        const result = await api.patch<Record<string, ProcessView>>(`/core/kyc/processes/${process}`, { type: 'document-submission', input: { media } })
        if (context.stopped() || result.kind === 'aborted') return
        const ended = fatal(result)
        if (ended) {
          context.fail(ended)
          return
        }
        if (result.kind !== 'ok') {
          refused(result.error, undefined)
          // A process that cannot take a submission any more (e.g. checked meanwhile) is left as it is.
          if (result.kind === 'refused' && result.error.code === 'operation_not_allowed') skip.hidden = false
          return
        }
        last = result.body[RESPONSE_KEYS[process]]!
        log(`${process} submitted:`, last.status)
        if (last.status === 'failed') {
          layout.setStatus('')
          layout.showError(`Your documents were not verified: ${failureText(last.output?.reason)}. You can try again with other files, or continue without it.`)
          skip.hidden = false
          return
        }
        resolve(last)
      } finally {
        setBusy(form, false)
      }
    }
  })
}
