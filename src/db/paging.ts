import type { SelectQueryBuilder } from 'kysely'
import type { PageWindow } from '../http/pagination.ts'

/**
 * One page of a list, newest first by a time-ordered id (UUID v7). It reads one row more than the page to
 * know whether another page follows, and returns the anchor for the links: the newest id the first page
 * saw, so that rows created while a client walks the pages never shift them.
 */
export async function fetchPage<DB, TB extends keyof DB, Row extends { id: string }>(
  query: SelectQueryBuilder<DB, TB, Row>,
  idColumn: string,
  window: PageWindow,
): Promise<{ items: Row[]; hasNext: boolean; anchor: string | undefined }> {
  const column = idColumn as never
  let until = window.until
  if (until === undefined && window.page > 1) {
    // A page reached without the links: anchor it, and the links that follow, at the newest row now.
    const newest = await query.clearSelect().select(column).orderBy(column, 'desc').limit(1).executeTakeFirst()
    until = (newest as Record<string, string> | undefined)?.[idColumn.split('.').pop()!]
  }
  const bounded = until === undefined ? query : query.where(column, '<=', until as never)
  const rows = await bounded.orderBy(column, 'desc').limit(window.perPage + 1).offset(window.offset).execute()
  const items = rows.slice(0, window.perPage)
  return { items, hasNext: rows.length > window.perPage, anchor: until ?? items[0]?.id }
}
