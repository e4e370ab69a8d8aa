/**
 * The stored text of the second a moment falls in, kept until the moment is in another second:
 * callers that format on every request (each its own, so two of them do not undo each other's)
 * build the text once a second.
 */
function perSecond(): (ms: number) => string {
  let second = Number.NaN;
  let text = '';
  return (ms) => {
    const now = Math.floor(ms / 1000);
    if (now !== second) {
      text = new Date(now * 1000).toISOString().slice(0, 19).replace('T', ' ');
      second = now;
    }
    return text;
  };
}

const formatted = perSecond();
const before = perSecond();

/** `YYYY-MM-DD HH:MM:SS` in UTC: the spec's timestamp format, also how timestamps are stored. */
export function formatTimestamp(date: Date): string {
  // Every Bearer request and token request formats "now": within one second the text is the same.
  return formatted(date.getTime());
}

/** The stored form of the moment `ms` before `date`, to the second: stored timestamps compare with it as text, unparsed. */
export function timestampBefore(date: Date, ms: number): string {
  return before(date.getTime() - ms);
}

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

/** A time as a person typed it: its stored form, or why it is none. */
type TypedTime = { readonly at: string } | { readonly invalid: 'format' | 'date' };

/**
 * A time typed in the stored form (`YYYY-MM-DD HH:MM:SS`, UTC), or as a browser's datetime-local
 * sends it (`T`, no seconds), with an optional `UTC` or `Z`. `format`: not of that form; `date`:
 * of the form, but no such moment (February 30th, 24:00, a 60th second), which deserves its own
 * message rather than the format's.
 */
export function readTypedTime(raw: string): TypedTime {
  const match = /^(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d)(:\d\d)?(?: ?(?:UTC|Z))?$/i.exec(raw.trim());
  if (!match) return { invalid: 'format' };
  const at = `${match[1]} ${match[2]}${match[3] ?? ':00'}`;
  const ms = parseTimestamp(at);
  return !Number.isNaN(ms) && new Date(ms).toISOString().slice(0, 19).replace('T', ' ') === at ? { at } : { invalid: 'date' };
}
