import { hash, randomBytes, scrypt, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';

const scryptAsync = promisify(scrypt) as (password: string, salt: Buffer, keylen: number, options: object) => Promise<Buffer>;

/** One of OWASP's equivalent scrypt settings (N=2^15, r=8, p=3): 32 MiB and tens of ms a hash. */
const SCRYPT = { N: 2 ** 15, r: 8, p: 3, maxmem: 128 * 1024 * 1024 };

/** The cost new hashes are made at: SCRYPT, unless a test process lowered it. */
let cost = SCRYPT;

/**
 * Tests only (test/helpers.ts calls it; nothing in src does): hash new passwords in this process at
 * scrypt's N=2^10 rather than 2^15. A stored hash names its own cost and verifyPassword reads it
 * back, so what the tests check of passwords (right, wrong, changed, unknown user) is the same;
 * they only stop spending most of their time in scrypt.
 */
export function lowerPasswordCostForTests(): void {
  cost = { ...SCRYPT, N: 2 ** 10 };
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await scryptAsync(password.normalize('NFKC'), salt, 32, cost);
  return `scrypt$${cost.N}$${cost.r}$${cost.p}$${salt.toString('base64url')}$${hash.toString('base64url')}`;
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64url');
  const actual = await scryptAsync(password.normalize('NFKC'), Buffer.from(salt, 'base64url'), expected.length, {
    N: Number(n),
    r: Number(r),
    p: Number(p),
    maxmem: SCRYPT.maxmem,
  });
  return timingSafeEqual(expected, actual);
}

/**
 * For high-entropy random secrets (API keys, tokens): a fast hash is enough and keeps lookups cheap.
 * The one-shot crypto.hash, not createHash: a Bearer request hashes twice (token, grant id), and
 * building a Hash object costs several times the digest of a 43-character token.
 */
export function sha256(secret: string): string {
  return hash('sha256', secret, 'base64url');
}

/**
 * Whether two hashes (or other strings of one length when equal) are the same, in time that does
 * not depend on where they differ. On the strings' code units, without the two Buffers that
 * timingSafeEqual needs: this runs on every request an API key authenticates.
 */
export function sameHash(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let difference = 0;
  for (let i = 0; i < a.length; i++) difference |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return difference === 0;
}

export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}
