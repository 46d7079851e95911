import { Api, type ApiPolicy, type ApiResult } from '../shared/api.ts'

export { apiBase, type ApiResult } from '../shared/api.ts'

/**
 * How the KYC widget reads the answers: a 2xx without a body is `ok` (the signed upload answers 204), and an answer
 * in Tessera's error shape is `refused` whatever its status (a busy provider's 503 is shown in the step).
 */
const API_POLICY: ApiPolicy = { service: 'The verification service', serverErrors: 'refused', emptyAnswer: 'ok' }

/** Tessera's API with the session's token; and the signed uploads of the files. */
export class KycApi extends Api {
  constructor(base: string, token: string) {
    super(base, token, API_POLICY)
  }

  /** Posts a file's content with its signed upload form: no token, the signature is the authorization. */
  upload(url: string, formData: Record<string, string>, file: File): Promise<ApiResult<undefined>> {
    const form = new FormData()
    for (const [name, value] of Object.entries(formData)) form.append(name, value)
    // The content is the last part: fields after it are not read.
    form.append('file', file, file.name)
    return this.send<undefined>(url, { method: 'POST', body: form })
  }
}
