/**
 * The media type, among those an operation offers, that an `Accept` header prefers (RFC 9110 §12.5.1): the highest
 * quality wins, then the most specific range, then the order of `offered`. No header, or one that accepts none of
 * them, gets the first offered (operations answer in JSON rather than refuse with 406).
 */
export function preferredMediaType<const T extends string>(accept: string | undefined, offered: readonly [T, ...T[]]): T {
  if (accept === undefined || accept.trim() === '') return offered[0]
  const ranges = accept.split(',').map((part) => {
    const [range = '', ...parameters] = part.split(';').map((piece) => piece.trim().toLowerCase())
    const q = parameters.find((parameter) => parameter.startsWith('q='))
    const quality = q === undefined ? 1 : Number(q.slice(2))
    return { range, quality: Number.isFinite(quality) && quality >= 0 && quality <= 1 ? quality : 0 }
  })
  let best: { type: T; quality: number; specificity: number } | undefined
  for (const type of offered) {
    const [major] = type.split('/')
    let match: { quality: number; specificity: number } | undefined
    for (const { range, quality } of ranges) {
      const specificity = range === type ? 2 : range === `${major}/*` ? 1 : range === '*/*' ? 0 : -1
      if (specificity >= 0 && (match === undefined || specificity > match.specificity)) match = { quality, specificity }
    }
    const better = best === undefined || match === undefined ? true : match.quality > best.quality || (match.quality === best.quality && match.specificity > best.specificity)
    if (match && match.quality > 0 && better) best = { type, ...match }
  }
  return best?.type ?? offered[0]
}
