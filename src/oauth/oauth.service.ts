/**
 * What the owner console may know of the authorization server without reaching into it: where
 * it is mounted, and how long a sign-in lasts (the console signs in with the server's session).
 */
export { AUTH_PATH, SESSION_TTL_SECONDS } from './provider/provider.js';
