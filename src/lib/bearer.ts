/**
 * The token of an `Authorization: Bearer <token>` header (RFC 6750 §2.1); '' when there is none. The scheme is
 * case-insensitive (RFC 9110 §11.1); the token's own syntax is left to whoever verifies it.
 */
export function bearerToken(authorization: string | undefined): string {
  return authorization !== undefined && /^bearer /i.test(authorization) ? authorization.slice(7).trim() : ''
}
