/** An instant as ISO 8601 text to the second, in UTC: `2024-05-01T12:00:00Z` (webhook events, representations). */
export function isoSeconds(date: Date): string {
  return `${date.toISOString().slice(0, 19)}Z`;
}
