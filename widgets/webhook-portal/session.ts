import type { PortalSession } from './types.ts'

/**
 * The portal session of this tab. It lives in `sessionStorage` (this tab only, gone with it), so that a reload keeps
 * working after the management link, which opens the portal once, was exchanged for it.
 */
const KEY = 'tessera.webhook-portal.session'

/** The `link` of the page's fragment (`#link=…`), when it has one. */
export function linkFromFragment(): string | undefined {
  const link = new URLSearchParams(location.hash.replace(/^#/, '')).get('link')
  return link !== null && link !== '' ? link : undefined
}

/** Takes the link out of the address bar and of the history: it is a credential, and a reload must not reuse it. */
export function stripFragment(): void {
  if (location.hash !== '') history.replaceState(history.state, '', `${location.pathname}${location.search}`)
}

export function storedSession(): PortalSession | undefined {
  try {
    const raw = sessionStorage.getItem(KEY)
    if (raw === null) return undefined
    const parsed = JSON.parse(raw) as Partial<PortalSession>
    if (typeof parsed.token !== 'string' || typeof parsed.expiresAt !== 'string') return undefined
    if (!(Date.parse(parsed.expiresAt) > Date.now())) {
      forgetSession()
      return undefined
    }
    return { token: parsed.token, expiresAt: parsed.expiresAt }
  } catch {
    return undefined
  }
}

export function storeSession(session: PortalSession): void {
  try {
    sessionStorage.setItem(KEY, JSON.stringify({ token: session.token, expiresAt: session.expiresAt }))
  } catch {
    // Storage refused (disabled, full): the portal still works until the page is reloaded.
  }
}

export function forgetSession(): void {
  try {
    sessionStorage.removeItem(KEY)
  } catch {
    // Nothing stored.
  }
}
