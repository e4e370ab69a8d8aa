import type { ImageMime } from './image-storage.js';

/**
 * Whether an image carries text a person may have written into it: PNG tEXt, iTXt and zTXt
 * chunks, JPEG COM segments, GIF comment extensions, or an XMP packet in any container. sharp's
 * header read reports EXIF, XMP (in some containers), IPTC and PNG tEXt, but not JPEG comments,
 * nor PNG's compressed and international text, nor XMP in GIF or AVIF; an image with any of them
 * must be re-encoded (which writes none of them) rather than stored as sent.
 *
 * Each container is walked by its own structure, so compressed pixel data is never read as a
 * marker. Where a walk meets something it does not follow, it answers true: a needless
 * re-encoding costs only the byte-for-byte copy, a missed comment would publish it.
 */
export function hasTextMetadata(data: Buffer, mime: ImageMime): boolean {
  if (hasXmpPacket(data)) return true;
  switch (mime) {
    case 'image/png':
      return pngHasText(data);
    case 'image/jpeg':
      return jpegHasComment(data);
    case 'image/gif':
      return gifHasComment(data);
    case 'image/webp':
    case 'image/avif':
      // Their text lives in XMP (and EXIF, which sharp reports); no other text chunk exists.
      return false;
  }
}

/**
 * Every XMP packet starts with its `<?xpacket` wrapper or the `x:xmpmeta` element (XMP part 1,
 * 7.3), stored as plain UTF-8 in every container that holds one.
 */
function hasXmpPacket(data: Buffer): boolean {
  return data.includes('<?xpacket') || data.includes('<x:xmpmeta');
}

const PNG_TEXT_CHUNKS = new Set(['tEXt', 'iTXt', 'zTXt']);

/** PNG: 8-byte signature, then chunks of length (4), type (4), data, CRC (4), up to IEND. */
function pngHasText(data: Buffer): boolean {
  let at = 8;
  while (at + 8 <= data.length) {
    const length = data.readUInt32BE(at);
    const type = data.toString('latin1', at + 4, at + 8);
    if (PNG_TEXT_CHUNKS.has(type)) return true;
    if (type === 'IEND') return false;
    at += 12 + length;
  }
  return false;
}

/** JPEG: marker segments (0xFF, code, 2-byte length) up to the scan (SOS); COM is 0xFE. */
function jpegHasComment(data: Buffer): boolean {
  let at = 2;
  while (at + 4 <= data.length) {
    if (data[at] !== 0xff) return true;
    const code = data[at + 1]!;
    // Fill bytes before a marker.
    if (code === 0xff) {
      at++;
      continue;
    }
    if (code === 0xfe) return true;
    if (code === 0xda || code === 0xd9) break;
    // Markers without a length: TEM and RSTn.
    if (code === 0x01 || (code >= 0xd0 && code <= 0xd7)) {
      at += 2;
      continue;
    }
    at += 2 + data.readUInt16BE(at + 2);
  }
  // A comment after the first scan (progressive files have several) is still a comment.
  return afterScanHasComment(data, at);
}

/**
 * After a scan's header the entropy-coded data escapes every 0xFF as 0xFF00, so 0xFF 0xFE there
 * is a marker, not data.
 */
function afterScanHasComment(data: Buffer, from: number): boolean {
  for (let at = data.indexOf(0xff, from); at >= 0 && at + 1 < data.length; at = data.indexOf(0xff, at + 1)) {
    if (data[at + 1] === 0xfe) return true;
  }
  return false;
}

/** GIF: header, screen descriptor and global colour table, then blocks up to the trailer (0x3B). */
function gifHasComment(data: Buffer): boolean {
  if (data.length < 13) return false;
  const packed = data[10]!;
  let at = 13 + (packed & 0x80 ? 3 * 2 ** ((packed & 0x07) + 1) : 0);
  /** Skips a chain of sub-blocks (a length byte, that many bytes, … up to a 0). */
  const skipSubBlocks = () => {
    while (at < data.length && data[at] !== 0) at += 1 + data[at]!;
    at++;
  };
  while (at < data.length) {
    const block = data[at];
    if (block === 0x3b) return false;
    if (block === 0x21) {
      if (data[at + 1] === 0xfe) return true;
      at += 2;
      skipSubBlocks();
    } else if (block === 0x2c) {
      const local = data[at + 9] ?? 0;
      at += 10 + (local & 0x80 ? 3 * 2 ** ((local & 0x07) + 1) : 0) + 1;
      skipSubBlocks();
    } else {
      return true;
    }
  }
  return false;
}
