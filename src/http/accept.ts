/** One media range of an Accept header: its type, lower-cased, and its q-value (1 when absent; NaN when unreadable). */
interface MediaRange {
  readonly type: string;
  readonly q: number;
}

/** The media ranges of an Accept header, in the order sent; none when there is no header. */
export function mediaRanges(accept: string | undefined): MediaRange[] {
  if (!accept) return [];
  return accept.split(',').map((part) => {
    const [type = '', ...params] = part.split(';').map((p) => p.trim());
    const q = params.find((p) => p.startsWith('q='));
    return { type: type.toLowerCase(), q: q === undefined ? 1 : Number(q.slice(2)) };
  });
}
