import type { DbHandle } from '../db/schema.js';
import type { RateLimitStore } from '../http/rate-limit.js';
import { findUserByEmail } from './account.repository.js';
import { hashPassword, randomToken, verifyPassword } from './secrets.js';

/** Sign-in attempts allowed per e-mail address and IP address in one window (counted in the database or Redis). */
export const LOGIN_ATTEMPTS = 5;
/** Per e-mail address from all IPs: many addresses cannot share out a guessing campaign. */
export const LOGIN_ATTEMPTS_PER_ACCOUNT = 20;
/** Per IP address over all e-mail addresses: one address cannot spray a password over many accounts. */
export const LOGIN_ATTEMPTS_PER_IP = 50;
export const LOGIN_WINDOW_SECONDS = 15 * 60;

/**
 * The counters of failed sign-ins, each with its limit. A success resets the first two: the user
 * has proved the password. The per-IP one only loses the success's own count, or a sprayer would
 * clear it with an account of its own.
 */
export function loginLimits(email: string, ip: string) {
  return [
    { key: `login:${email}:${ip}`, limit: LOGIN_ATTEMPTS, resetOnSuccess: true },
    { key: `login-account:${email}`, limit: LOGIN_ATTEMPTS_PER_ACCOUNT, resetOnSuccess: true },
    { key: `login-ip:${ip}`, limit: LOGIN_ATTEMPTS_PER_IP, resetOnSuccess: false },
  ] as const;
}

// An unknown e-mail address costs the same scrypt time as a wrong password, so timing tells nothing.
let decoyHash: Promise<string> | undefined;

type LoginOutcome =
  | { readonly ok: true; readonly userId: number; readonly email: string }
  | { readonly ok: false; readonly status: 400 | 429; readonly error: string; readonly retryAfter?: number };

/**
 * One sign-in attempt, counted against the login limits: the OAuth login step and the owner
 * console both go through here, so a guesser gains nothing by switching pages. Only failures
 * count: each attempt is counted before the password is checked, so a burst of guesses cannot
 * all pass before the first is counted, and a success takes its count back. An office or a CI
 * runner signing in often from one address is never held up by its successes.
 */
export async function attemptLogin(
  db: DbHandle,
  limits: RateLimitStore,
  input: { email: string; password: string; ip: string },
): Promise<LoginOutcome> {
  const email = input.email.trim().toLowerCase();
  const counters = loginLimits(email, input.ip);
  const hits = await Promise.all(counters.map(({ key }) => limits.hit(key, LOGIN_WINDOW_SECONDS)));
  const over = hits.filter((hit, i) => hit.count > counters[i]!.limit);
  if (over.length) {
    const retryAfter = Math.max(...over.map((hit) => hit.retryAfter));
    const minutes = Math.ceil(retryAfter / 60);
    return {
      ok: false,
      status: 429,
      retryAfter,
      error: `Too many failed sign-in attempts. Try again in ${minutes} minute${minutes === 1 ? '' : 's'}.`,
    };
  }
  const user = email ? await findUserByEmail(db, email) : undefined;
  decoyHash ??= hashPassword(randomToken());
  const valid = await verifyPassword(input.password, user?.password_hash ?? (await decoyHash));
  if (!user || !valid) return { ok: false, status: 400, error: 'The e-mail address or password is not correct.' };
  await Promise.all(counters.map(({ key, resetOnSuccess }) => (resetOnSuccess ? limits.reset(key) : limits.takeBack(key))));
  return { ok: true, userId: user.id, email: user.email };
}
