import type { IncomingHttpHeaders } from 'node:http'

/** The end user's context as the client reports it in the X-Service-User-* headers (recorded with consents, creations). */
export interface UserContext {
  ip?: string
  agent?: string
  origin?: string
  country?: string
  subdivision?: string
  city?: string
}

export function userContextOf(headers: IncomingHttpHeaders): UserContext {
  const read = (name: string) => (typeof headers[name] === 'string' ? (headers[name] as string) : undefined)
  return {
    ip: read('x-service-user-ip'),
    agent: read('x-service-user-agent'),
    origin: read('x-service-user-origin'),
    country: read('x-service-user-country'),
    subdivision: read('x-service-user-subdivision'),
    city: read('x-service-user-city'),
  }
}
