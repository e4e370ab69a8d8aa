import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The form token of one interaction (or console session): an HMAC of its uid under the cookie
 * secret. A forged cross-site POST has neither this value nor (SameSite=Lax) the cookie.
 */
export function csrfToken(secrets: readonly string[], uid: string): string {
  return createHmac('sha256', secrets[0] ?? '')
    .update(`interaction-form:${uid}`)
    .digest('base64url');
}

/**
 * Any configured secret is accepted, so rotating COOKIE_SECRETS does not break open forms. The
 * comparison takes the same time wherever a forged token differs.
 */
export function csrfValid(secrets: readonly string[], uid: string, sent: unknown): boolean {
  if (typeof sent !== 'string' || !sent) return false;
  const given = Buffer.from(sent);
  return secrets.some((secret) => {
    const expected = Buffer.from(csrfToken([secret], uid));
    return expected.length === given.length && timingSafeEqual(expected, given);
  });
}
