/** `YYYY-MM-DD HH:MM:SS` in UTC: the spec's timestamp format, also how timestamps are stored. */
export function formatTimestamp(date: Date): string {
  return date.toISOString().slice(0, 19).replace('T', ' ');
}

export function now(): string {
  return formatTimestamp(new Date());
}
