import Type, { type Static } from 'typebox'
import { UUID_PATTERN } from '../lib/ids.ts'
import { component } from './schemas.ts'

export const DEFAULT_PER_PAGE = 10
export const MAX_PER_PAGE = 100

/** Query parameters of every list endpoint; spread them into the route's querystring schema. */
export const PaginationQuery = {
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000, default: 1, description: 'Page number, from 1.' })),
  perPage: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PER_PAGE, default: DEFAULT_PER_PAGE, description: 'Items per page.' })),
  until: Type.Optional(
    Type.String({
      pattern: UUID_PATTERN,
      description:
        'Set by the pagination links: the newest item when the first page was read. Later pages leave out items created ' +
        'since, so that pages do not shift while you walk them.',
    }),
  ),
}
export type PaginationParams = { page?: number; perPage?: number; until?: string }

export const Pagination = component(
  'pagination',
  Type.Object(
    {
      first: Type.String({ format: 'uri', description: 'The first page.' }),
      prev: Type.Optional(Type.String({ format: 'uri', description: 'The previous page, when there is one.' })),
      next: Type.Optional(Type.String({ format: 'uri', description: 'The next page, when there is one.' })),
    },
    { description: 'Links to other pages, with every filter of the request.' },
  ),
)
export type Pagination = Static<typeof Pagination>

/** What a list query needs: how many to skip and take, and the anchor that keeps pages stable. */
export interface PageWindow {
  page: number
  perPage: number
  offset: number
  until: string | undefined
}

export function pageWindow(params: PaginationParams): PageWindow {
  const page = params.page ?? 1
  const perPage = params.perPage ?? DEFAULT_PER_PAGE
  return { page, perPage, offset: (page - 1) * perPage, until: params.until?.toLowerCase() }
}

/**
 * The links of a page as absolute URLs: the request's own query (filters included, in their order and
 * encoding) with `page`, `perPage` and the anchor set for each target page.
 */
export function paginationLinks(input: { baseUrl: string; requestUrl: string; window: PageWindow; anchor: string | undefined; hasNext: boolean }): Pagination {
  const url = new URL(input.requestUrl, 'http://localhost')
  const link = (page: number) => {
    const query = new URLSearchParams(url.search)
    for (const name of ['page', 'perPage', 'until']) query.delete(name)
    query.set('page', String(page))
    query.set('perPage', String(input.window.perPage))
    if (input.anchor !== undefined) query.set('until', input.anchor)
    return `${input.baseUrl}${url.pathname}?${query.toString()}`
  }
  return {
    first: link(1),
    ...(input.window.page > 1 ? { prev: link(input.window.page - 1) } : {}),
    ...(input.hasNext ? { next: link(input.window.page + 1) } : {}),
  }
}
