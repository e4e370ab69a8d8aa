/**
 * Multipart bodies for the fuzz suite, written byte by byte (a FormData encoder would never make
 * the broken ones): the blog's `data` field and image files, with broken boundaries, wrong or
 * missing Content-Disposition, non-image files, huge part headers, bodies cut short.
 */
import fc from 'fast-check';
import { hostileString } from './fuzz.arbitraries.js';

const FILE_FIELDS = [
  'uploadPrimaryImage',
  'uploadAdditionalImage',
  'uploadAdditionalImages',
  'primaryImage',
  'additionalImage',
  'additionalImages',
];

export interface Multipart {
  contentType: string;
  payload: Buffer;
}

/** Real images of each accepted type, made by the test (sharp), and their file names. */
export type Images = ReadonlyArray<{ file: Buffer; filename: string }>;

/** One part: its header lines (without CRLF) and its content. */
interface Part {
  headers: string[];
  content: Buffer;
}

/** A quoted-string parameter, or a broken one. */
const paramValue = fc.oneof(
  { arbitrary: hostileString.map((s) => `"${s.replace(/[\r\n]/g, '')}"`), weight: 4 },
  { arbitrary: hostileString.map((s) => s.replace(/[\r\n;]/g, '')), weight: 1 }, // unquoted
  { arbitrary: fc.constantFrom('"unclosed', '""', '"a\\"b"', "UTF-8''%E2%82%AC.png", '"../../x.png"'), weight: 1 },
);

const disposition = (name: fc.Arbitrary<string>, filename?: fc.Arbitrary<string>) =>
  fc.oneof(
    {
      arbitrary: fc
        .tuple(name, filename ?? fc.constant(undefined))
        .map(([n, f]) => `Content-Disposition: form-data; name="${n}"${f === undefined ? '' : `; filename=${f}`}`),
      weight: 40,
    },
    { arbitrary: fc.tuple(name, paramValue).map(([n, f]) => `Content-Disposition: form-data; name="${n}"; filename*=${f}`), weight: 1 },
    { arbitrary: name.map((n) => `Content-Disposition: attachment; name="${n}"`), weight: 1 },
    {
      arbitrary: fc.constantFrom(
        'Content-Disposition: form-data',
        'Content-Disposition: form-data; name=',
        'Content-Disposition:',
        'Content-Disposition: ;;;',
      ),
      weight: 1,
    },
    { arbitrary: paramValue.map((v) => `Content-Disposition: form-data; name=${v}`), weight: 1 },
  );

/** Extra header lines of a part, now and then: a content type, junk, or one so long it exceeds any sane limit. */
const junkHeaders = fc.array(
  fc.oneof(
    {
      arbitrary: fc
        .constantFrom('application/json', 'text/plain', 'image/png', 'application/octet-stream', 'multipart/mixed', ';')
        .map((t) => `Content-Type: ${t}`),
      weight: 4,
    },
    { arbitrary: fc.constantFrom('no colon here', 'X-Weird: \u00ff', 'Content-Transfer-Encoding: base64', ': value'), weight: 1 },
    { arbitrary: fc.integer({ min: 1000, max: 200_000 }).map((n) => `X-Pad: ${'a'.repeat(n)}`), weight: 1 },
  ),
  { minLength: 1, maxLength: 2 },
);
const extraHeaders = fc.oneof({ arbitrary: fc.constant([]), weight: 4 }, { arbitrary: junkHeaders, weight: 1 });

function fileContent(images: Images): fc.Arbitrary<{ file: Buffer; filename: string }> {
  const image = fc.constantFrom(...images);
  return fc.oneof(
    { arbitrary: image, weight: 10 },
    { arbitrary: fc.uint8Array({ maxLength: 300 }).map((b) => ({ file: Buffer.from(b), filename: 'random.bin' })), weight: 2 },
    { arbitrary: fc.constant({ file: Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>'), filename: 'x.svg' }), weight: 1 },
    { arbitrary: fc.constant({ file: Buffer.from('%PDF-1.4\n%\xe2\xe3\n'), filename: 'x.pdf' }), weight: 1 },
    { arbitrary: fc.constant({ file: Buffer.alloc(0), filename: 'empty.png' }), weight: 1 },
    // The right magic bytes and nothing sensible after them: the type sniffs, the size cannot be read.
    {
      arbitrary: fc.tuple(image, fc.nat()).map(([i, n]) => ({ file: i.file.subarray(0, 8 + (n % 40)), filename: `cut-${i.filename}` })),
      weight: 2,
    },
    {
      arbitrary: fc
        .tuple(image, fc.uint8Array({ minLength: 1, maxLength: 64 }))
        .map(([i, junk]) => ({ file: Buffer.concat([i.file.subarray(0, 16), Buffer.from(junk)]), filename: i.filename })),
      weight: 1,
    },
  );
}

function dataPart(body: fc.Arbitrary<string>): fc.Arbitrary<Part> {
  const name = fc.oneof(
    { arbitrary: fc.constant('data'), weight: 9 },
    { arbitrary: hostileString.map((s) => s.replace(/["\r\n]/g, '')), weight: 1 },
  );
  return fc
    .record({ disposition: disposition(name), extra: extraHeaders, body })
    .map((p) => ({ headers: [p.disposition, ...p.extra], content: skippable(p.disposition, Buffer.from(p.body)) }));
}

/**
 * Busboy skips a part whose Content-Disposition is not form-data with a name, and when that part is
 * larger than its 16 KiB buffer it never finishes the form: the service answers 400 only after
 * waiting FORM_SETTLE_MS (src/content/blogs/blog.uploads.ts; its test is in blog.malformed.test.ts).
 * Such parts stay small here so that thousands of cases do not each wait that long.
 */
function skippable(disposition: string, content: Buffer): Buffer {
  return /^Content-Disposition: form-data; name=/.test(disposition) ? content : content.subarray(0, 8 * 1024);
}

function filePart(images: Images): fc.Arbitrary<Part> {
  const name = fc.oneof(
    { arbitrary: fc.constantFrom(...FILE_FIELDS), weight: 9 },
    { arbitrary: fc.constantFrom('data', 'image', 'file'), weight: 1 },
  );
  return fc
    .tuple(
      fileContent(images),
      name,
      paramValue,
      fc.oneof({ arbitrary: fc.constant(false), weight: 4 }, { arbitrary: fc.constant(true), weight: 1 }),
      extraHeaders,
    )
    .chain(([content, fieldName, hostileName, useHostileName, extra]) =>
      disposition(fc.constant(fieldName), fc.constant(useHostileName ? hostileName : `"${content.filename}"`)).map((d) => ({
        headers: [d, 'Content-Type: application/octet-stream', ...extra],
        content: skippable(d, content.file),
      })),
    );
}

/** The body of a blog POST as multipart: mostly well-formed forms with odd parts, sometimes broken framing. */
export function multipartBody(data: fc.Arbitrary<string>, images: Images): fc.Arbitrary<Multipart> {
  const parts = fc
    .tuple(
      fc.option(dataPart(data), { freq: 12 }),
      fc.array(filePart(images), { maxLength: 3 }),
      fc.oneof(
        { arbitrary: fc.constant([]), weight: 8 },
        { arbitrary: fc.array(dataPart(data), { minLength: 1, maxLength: 1 }), weight: 1 },
      ),
      fc.boolean(),
    )
    .map(([first, files, more, dataLast]) => {
      const list = [...files, ...more];
      if (first) dataLast ? list.push(first) : list.unshift(first);
      return list;
    });
  const boundary = fc.oneof(
    { arbitrary: fc.constant('fuzzBoundary'), weight: 16 },
    { arbitrary: fc.constantFrom('a', '--', ' spaced ', 'x'.repeat(71), 'x'.repeat(200), 'é'), weight: 1 },
  );
  const damage = fc.oneof(
    { arbitrary: fc.constant('none'), weight: 18 },
    {
      arbitrary: fc.constantFrom('no-closing', 'cut', 'wrong-boundary', 'no-boundary', 'lf-only', 'preamble', 'quoted-boundary', 'empty'),
      weight: 8,
    },
  );
  return fc.record({ parts, boundary, damage, cutAt: fc.nat() }).map(({ parts, boundary, damage, cutAt }) => {
    const eol = damage === 'lf-only' ? '\n' : '\r\n';
    const chunks: Buffer[] = damage === 'preamble' ? [Buffer.from(`junk before the first boundary${eol}`)] : [];
    for (const part of parts) {
      chunks.push(Buffer.from(`--${boundary}${eol}${part.headers.join(eol)}${eol}${eol}`), part.content, Buffer.from(eol));
    }
    if (damage !== 'no-closing') chunks.push(Buffer.from(`--${boundary}--${eol}`));
    let payload = damage === 'empty' ? Buffer.alloc(0) : Buffer.concat(chunks);
    if (damage === 'cut') payload = payload.subarray(0, cutAt % (payload.length + 1));
    const contentType =
      damage === 'no-boundary'
        ? 'multipart/form-data'
        : damage === 'wrong-boundary'
          ? 'multipart/form-data; boundary=notTheBoundary'
          : damage === 'quoted-boundary'
            ? `multipart/form-data; boundary="${boundary}"`
            : `multipart/form-data; boundary=${boundary}`;
    return { contentType, payload };
  });
}
