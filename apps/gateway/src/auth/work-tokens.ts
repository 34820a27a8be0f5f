/**
 * When a sessions token (`mhwt_`, auth/principals.ts) still acts for its session, as SQL over the
 * work item's row: the principal lookup and the work queue (work/queue.ts) ask the same question.
 */

/**
 * SQL, true while a sessions token of delivery `delivery` acts for its session (`w` is the item's
 * gw_work row): it is the item's current delivery, the item is not stopped, and its lease, once
 * the item was acknowledged, has not lapsed (a dead worker's token stops at its lease's end, not
 * at the next poll that reclaims the item). `delivery` and `now` are SQL expressions.
 */
export function tokenCurrentSql(delivery: string, now: string): string {
  return `(${delivery} = w.delivery AND w.state <> 'stopped' AND (w.lease_expires_at IS NULL OR w.lease_expires_at >= ${now}))`;
}
