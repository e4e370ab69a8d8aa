import type { FastifyReply, FastifyRequest } from 'fastify';
import type Provider from 'oidc-provider';

/** Koa's context for this request: the provider's cookie jar (its keys, its Secure rule). */
export function cookieJar(provider: Provider, request: FastifyRequest, reply: FastifyReply) {
  return provider.createContext(request.raw, reply.raw).cookies;
}
