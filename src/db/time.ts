/** `YYYY-MM-DD HH:MM:SS` in UTC: the spec's timestamp format, also how timestamps are stored. */
export function formatTimestamp(date: Date): string {
  const second = Math.floor(date.getTime() / 1000);
  // Every Bearer request and token request formats "now": within one second the text is the same.
  if (second !== lastSecond) {
    lastText = textOfSecond(second);
    lastSecond = second;
  }
  return lastText;
}

let lastSecond = Number.NaN;
let lastText = '';

function textOfSecond(second: number): string {
  return new Date(second * 1000).toISOString().slice(0, 19).replace('T', ' ');
}

/**
 * The stored form of the moment `ms` before `date`, to the second: stored timestamps compare with
 * it as text, without being parsed. Kept for the second, as formatTimestamp's is (one `ms` per caller).
 */
export function timestampBefore(date: Date, ms: number): string {
  const second = Math.floor((date.getTime() - ms) / 1000);
  if (second !== beforeSecond) {
    beforeText = textOfSecond(second);
    beforeSecond = second;
  }
  return beforeText;
}

let beforeSecond = Number.NaN;
let beforeText = '';

export function now(): string {
  return formatTimestamp(new Date());
}

/** Milliseconds since the epoch of a stored `YYYY-MM-DD HH:MM:SS` (UTC) timestamp. */
export function parseTimestamp(timestamp: string): number {
  return Date.parse(`${timestamp.replace(' ', 'T')}Z`);
}

/** The stored form of the moment `seconds` from now. */
export function secondsFromNow(seconds: number): string {
  return formatTimestamp(new Date(Date.now() + seconds * 1000));
}

/** Timestamps are stored as text `YYYY-MM-DD HH:MM:SS` (UTC) on both databases. */
export type Timestamp = string;
