import cluster from 'node:cluster';
import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { hostname } from 'node:os';
import { type FastifyRequest, LogController } from 'fastify';
import pino from 'pino';
import type { LogLevel } from '../config.js';

/** Query parameters that can carry secrets, by name in lower case; their values are logged as [redacted]. */
const SECRET_PARAMS = new Set([
  'access_token',
  'refresh_token',
  'code',
  'code_verifier',
  'token',
  'password',
  'api_key',
  'apikey',
  'apiid',
]);

/** Headers that carry credentials, as pino redact path segments. */
const SECRET_HEADERS = ['.authorization', '.cookie', '["x-api-key"]', '.apikey', '["set-cookie"]', '["proxy-authorization"]'];

/**
 * The URL with the value of every secret parameter redacted. A name is judged as the query parser
 * reads it, percent-decoded and `+` as a space: `api%4Bey` is apiKey to the API-key method, so it
 * is apiKey here too, or a client could have its key logged by encoding one letter of the name.
 */
function redactUrl(url: string): string {
  const start = url.indexOf('?');
  if (start === -1) return url;
  const pairs = url
    .slice(start + 1)
    .split('&')
    .map((pair) => {
      const equals = pair.indexOf('=');
      if (equals === -1) return pair;
      if (SECRET_PARAMS.has(decodedName(pair.slice(0, equals)))) return `${pair.slice(0, equals)}=[redacted]`;
      return `${pair.slice(0, equals + 1)}${redactedAddress(pair.slice(equals + 1))}`;
    });
  return `${url.slice(0, start + 1)}${pairs.join('&')}`;
}

/**
 * A parameter's value that is itself an address with a query (the console's `next`), with that
 * query's secrets redacted: a link that carries a credential inside it logs it no more than one
 * that carries it outright.
 */
function redactedAddress(value: string): string {
  if (!value.includes('%3F') && !value.includes('%3f') && !value.includes('?')) return value;
  let decoded: string;
  try {
    decoded = decodeURIComponent(value.replaceAll('+', ' '));
  } catch {
    return value;
  }
  const redacted = redactUrl(decoded);
  return redacted === decoded ? value : encodeURIComponent(redacted);
}

/**
 * The URL without its secret parameters, name and value: for a URL the server sends back, such as
 * a redirect built from the request's own address. A redirect's Location is followed by the
 * browser, stored in its history, sent on as the next request's URL and logged there, so a
 * credential sent in the query string must not travel on in it.
 */
export function withoutSecretParams(url: string): string {
  const start = url.indexOf('?');
  if (start === -1) return url;
  const hash = url.indexOf('#', start);
  const end = hash === -1 ? url.length : hash;
  const kept = url
    .slice(start + 1, end)
    .split('&')
    .filter((pair) => {
      const equals = pair.indexOf('=');
      return pair !== '' && !SECRET_PARAMS.has(decodedName(equals === -1 ? pair : pair.slice(0, equals)));
    });
  return `${url.slice(0, start)}${kept.length ? `?${kept.join('&')}` : ''}${url.slice(end)}`;
}

function decodedName(name: string): string {
  try {
    return decodeURIComponent(name.replaceAll('+', ' ')).toLowerCase();
  } catch {
    // Not valid percent-encoding: the parser keeps such a name as it is.
    return name.toLowerCase();
  }
}

/** `stream`: where lines go; pino's default (stdout, written synchronously) when absent. */
export function loggerOptions(level: LogLevel, stream?: pino.DestinationStream) {
  return {
    level,
    // A worker of several (WORKERS) names itself on every line, beside pino's pid and hostname.
    ...(cluster.worker ? { base: { pid: process.pid, hostname: hostname(), worker: cluster.worker.id } } : {}),
    ...(stream ? { stream } : {}),
    // Our serializers never log headers, but plugins do: @fastify/multipart logs its busboy options
    // at trace, request headers included ({ busboyOptions: { headers } }). Redacting by header name
    // at the top or up to two levels down covers that and whatever else logs `{ x: { headers } }`, without
    // knowing each plugin's field names.
    redact: { paths: SECRET_HEADERS.flatMap((name) => [`headers${name}`, `*.headers${name}`, `*.*.headers${name}`]), censor: '[redacted]' },
    serializers: {
      req(request: FastifyRequest) {
        return {
          method: request.method,
          url: redactUrl(request.url),
          remoteAddress: request.ip,
        };
      },
    },
  };
}

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';

/**
 * A request's logger that becomes a pino child only when it first writes a line. A child of a
 * logger with `redact` is costly to make, and most requests log nothing at LOG_LEVEL=warn, so none
 * is made until a line is written (the cost is in bench/README.md). The lines it writes are those of the child: same bindings, same redaction.
 */
class RequestLogger {
  #child: pino.Logger | undefined;
  constructor(
    private readonly parent: pino.Logger,
    private readonly bindings: pino.Bindings,
    private readonly options: pino.ChildLoggerOptions,
  ) {}

  get level(): string {
    return this.#real().level;
  }

  #real(): pino.Logger {
    this.#child ??= this.parent.child(this.bindings, this.options);
    return this.#child;
  }

  #write(level: Level, args: unknown[]): void {
    if (!this.parent.isLevelEnabled(level) && this.options.level === undefined) return;
    (this.#real()[level] as (...a: unknown[]) => void)(...args);
  }

  fatal(...args: unknown[]) {
    this.#write('fatal', args);
  }
  error(...args: unknown[]) {
    this.#write('error', args);
  }
  warn(...args: unknown[]) {
    this.#write('warn', args);
  }
  info(...args: unknown[]) {
    this.#write('info', args);
  }
  debug(...args: unknown[]) {
    this.#write('debug', args);
  }
  trace(...args: unknown[]) {
    this.#write('trace', args);
  }
  silent() {}
  child(bindings: pino.Bindings, options?: pino.ChildLoggerOptions): pino.Logger {
    return this.#real().child(bindings, options);
  }
  isLevelEnabled(level: string): boolean {
    return this.#real().isLevelEnabled(level);
  }
}

/**
 * Fastify's own per-request lines, 'incoming request' and 'request completed', are written at
 * info. When info is off they are skipped before Fastify builds them: it made each line's object and
 * read the clock before the logger could say no, on every request.
 * A request that ended in an error still has its line, and every other line is Fastify's as before.
 */
export function requestLines(level: LogLevel): LogController {
  // pino has no number for 'silent': above every level.
  if ((pino.levels.values[level] ?? Number.POSITIVE_INFINITY) <= pino.levels.values.info!) return new LogController();
  return new (class extends LogController {
    override incomingRequest(): void {}
    override requestCompleted(...args: Parameters<LogController['requestCompleted']>): void {
      if (args[0]) super.requestCompleted(...args);
    }
  })();
}

/** Fastify's childLoggerFactory: each request's logger, made a pino child on its first line (RequestLogger). */
export function requestLogger(logger: pino.Logger, bindings: pino.Bindings, options: pino.ChildLoggerOptions): pino.Logger {
  return new RequestLogger(logger, bindings, options) as unknown as pino.Logger;
}

/** An X-Request-Id the client sent that is taken as the request's id: a plain token, as a log line can hold it. */
const SENT = /^[\w.-]{1,64}$/;

/**
 * Fastify's genReqId: the client's X-Request-Id when it is a plain token of 1–64 characters (so a
 * caller can follow its own id through our logs), otherwise an id of this process's own. Those are
 * a prefix of 96 random bits drawn when the process starts and a counter: unique across processes
 * and nodes without any coordination, as a random UUID per request was, at a fraction of the cost
 * (a UUID and its checks were about a tenth of a GET by id under load). Request ids
 * are for following a request through the logs; nothing trusts or authorizes by them.
 */
export function requestIds(prefix = randomBytes(12).toString('base64url')): (request: IncomingMessage) => string {
  let count = 0;
  return (request) => {
    const sent = request.headers['x-request-id'];
    if (typeof sent === 'string' && SENT.test(sent)) return sent;
    count += 1;
    return `${prefix}-${count.toString(36)}`;
  };
}
