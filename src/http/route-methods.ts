import type { RouteOptions } from 'fastify';

/**
 * The methods of each route pattern, found by a request's path rather than through the router:
 * for a preflight (an OPTIONS request, whose real method is only announced) and for a 405, where
 * the router found no route for the method and the path's other methods are to be named. Every
 * pattern that matches contributes its methods.
 */
export class RouteMethods {
  private readonly routes = new Map<string, { pattern: RegExp; methods: Set<string> }>();

  add(route: RouteOptions): void {
    const entry = this.routes.get(route.url) ?? { pattern: patternOf(route.url), methods: new Set<string>() };
    for (const method of [route.method].flat()) entry.methods.add(method);
    this.routes.set(route.url, entry);
  }

  of(path: string): string[] {
    const methods = new Set<string>();
    for (const { pattern, methods: some } of this.routes.values()) if (pattern.test(path)) for (const m of some) methods.add(m);
    return [...methods];
  }
}

/** A Fastify route pattern as a regular expression: `:name` is one path segment, `*` the rest; a trailing slash is ignored (ignoreTrailingSlash). */
function patternOf(url: string): RegExp {
  const source = url
    .split(/(:\w+|\*)/)
    .map((part, i) => (i % 2 === 0 ? part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') : part === '*' ? '.*' : '[^/]+'))
    .join('');
  return new RegExp(`^${source.replace(/\/$/, '')}/?$`);
}

/** A request URL's path, without its query. */
export function pathOf(url: string): string {
  const question = url.indexOf('?');
  return question === -1 ? url : url.slice(0, question);
}
