/**
 * Sends the outbox (webhook.outbox.ts), one worker per process, every node alike:
 *
 * - Every `pollMs` it claims the deliveries that are due, in one statement that moves them a lease
 *   ahead under its own name. On PostgreSQL the rows are picked `for update skip locked`, so two
 *   nodes never claim the same row; SQLite has one writer. Nothing another node needs is kept in
 *   memory: a node that dies mid-attempt leaves its rows to be claimed again when the lease ends.
 * - Attempts run beside each other, at most `concurrency` in the process, `concurrencyPerSite` to
 *   one website's hooks and `concurrencyPerHook` to one hook: a website's slow or hanging receivers
 *   hold that website's share of the slots and never the slots other websites' deliveries need.
 *   The shares are counted per process (each node has its own slots), and a claim takes only
 *   deliveries that fit them: the due deliveries of a website or hook whose share is full are not
 *   claimed, so they never stand in front of another website's, however many are due.
 * - Results are written in one transaction per poll rather than one per attempt: on SQLite every
 *   transaction queues behind the API's writes for the one writer.
 */
import { randomBytes } from 'node:crypto';
import type { WebhookConfig } from '../config.js';
import type { DbHandle } from '../db/schema.js';
import { now } from '../db/time.js';
import type { OutboundGuard } from '../http/outbound.js';
import { DELIVERY_TIMEOUT_MS } from './webhook.guard.js';
import { inLockOrder, type Outcome, recordOutcome } from './webhook.outcome.js';
import { type ClaimedDelivery, claimDeliveries, dueDeliveries, type HookToSend, hooksToSend } from './webhook.repository.js';
import { retryAfterSeconds } from './webhook.retry.js';
import { signedHeaders } from './webhook.signing.js';

/**
 * How long a claim stands (the default of `leaseMs`). Longer than any attempt can take, so a claim
 * older than this belongs to a node that died, and another node may send the delivery again.
 */
const LEASE_MS = DELIVERY_TIMEOUT_MS + 15_000;

export interface WebhookWorkerDeps {
  readonly db: DbHandle;
  readonly config: WebhookConfig;
  readonly guard: OutboundGuard;
  readonly warn: (error: unknown, message: string) => void;
  /**
   * How far ahead a claim moves a delivery (LEASE_MS unless given; tests shorten it). It must stay
   * longer than the guard lets an attempt take: a shorter lease lets a second node send a delivery
   * whose first attempt is still under way.
   */
  readonly leaseMs?: number;
}

export class WebhookWorker {
  /** Names this process's claims. */
  readonly node = randomBytes(8).toString('hex');
  /** Attempts in flight per hook and per website, in this process. */
  private readonly perHook = new Map<number, number>();
  private readonly perSite = new Map<number, number>();
  private inFlight = 0;
  private finished: Outcome[] = [];
  private readonly attempts = new Set<Promise<void>>();
  private readonly stopping = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  /** Polling on its own schedule (start); a worker that was not started polls only when told (tests). */
  private started = false;
  private polling: Promise<void> | undefined;
  /** Set when a slot came free during a poll: the next poll follows at once. */
  private again = false;

  constructor(private readonly deps: WebhookWorkerDeps) {}

  start(): void {
    this.started = true;
    this.next(0);
  }

  /** Stops claiming, cuts the attempts in flight short (their deliveries are due again at once) and writes every result. */
  async stop(): Promise<void> {
    this.stopping.abort();
    clearTimeout(this.timer);
    await this.polling;
    await Promise.allSettled(this.attempts);
    await this.flush();
  }

  /**
   * One poll: the results so far written, then as many due deliveries claimed and their attempts
   * begun as there are free slots for. Resolves when both are done; the attempts go on (settled).
   */
  async poll(): Promise<void> {
    await this.flush();
    const free = this.deps.config.concurrency - this.inFlight;
    if (free <= 0 || this.stopping.signal.aborted) return;
    const claimed = await this.claim(free);
    if (claimed.length === 0) return;
    const hooks = new Map(
      (await hooksToSend(this.deps.db, [...new Set(claimed.map((c) => c.webhook_id))], now())).map((hook) => [hook.id, hook]),
    );
    for (const delivery of claimed) {
      const hook = hooks.get(delivery.webhook_id);
      if (hook?.status !== 'active') this.finished.push({ kind: 'cancel', delivery });
      else if (!Number(hook.credential_live)) this.finished.push({ kind: 'revoked', delivery });
      else this.send(delivery, hook);
    }
  }

  /** Resolves once the attempts in flight have ended and their results are written: a test's next step. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.attempts]);
    await this.flush();
  }

  private next(delay: number): void {
    if (this.stopping.signal.aborted) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.again = false;
      this.polling = this.poll()
        .catch((error) => this.deps.warn(error, 'webhook delivery poll failed; trying again'))
        .finally(() => {
          this.polling = undefined;
          this.next(this.again ? 0 : this.deps.config.pollMs);
        });
    }, delay);
    this.timer.unref();
  }

  /**
   * A slot came free, or a poll filled every slot: poll again now rather than at the next tick, so
   * a busy hook is limited by its receiver and its concurrency, not by the poll interval.
   */
  private wake(): void {
    if (!this.started) return;
    if (this.polling) this.again = true;
    else this.next(0);
  }

  /**
   * Claims up to `limit` due deliveries, oldest first, within the shares: the candidates are read
   * without the websites and hooks whose share is full, and those beyond what a share has left are
   * left for the next poll (which follows at once: `again`). Then the chosen rows are moved a lease
   * ahead under this node's name, each only if it is still due: a row another node claimed
   * meanwhile is skipped, so no delivery is claimed twice.
   */
  private async claim(limit: number): Promise<ClaimedDelivery[]> {
    const { db, config } = this.deps;
    const full = (counts: Map<number, number>, share: number) => [...counts].filter(([, n]) => n >= share).map(([id]) => id);
    const fullSites = full(this.perSite, config.concurrencyPerSite);
    const fullHooks = full(this.perHook, config.concurrencyPerHook);
    const nowMs = Date.now();
    // A poll that finds nothing due writes nothing: most polls, and on SQLite a write would queue
    // for the one writer many times a second.
    const candidates = await dueDeliveries(db, { nowMs, limit, notSites: fullSites, notHooks: fullHooks });
    if (candidates.length === 0) return [];
    const sites = new Map(this.perSite);
    const hooks = new Map(this.perHook);
    const chosen: number[] = [];
    for (const candidate of candidates) {
      const site = sites.get(candidate.site_id) ?? 0;
      const hook = hooks.get(candidate.webhook_id) ?? 0;
      if (site >= config.concurrencyPerSite || hook >= config.concurrencyPerHook) continue;
      sites.set(candidate.site_id, site + 1);
      hooks.set(candidate.webhook_id, hook + 1);
      chosen.push(candidate.id);
    }
    // Slots left free by a full share or a full poll: the next poll looks again at once.
    if (candidates.length === limit) this.again = true;
    if (chosen.length === 0) return [];
    return claimDeliveries(db, chosen, { nowMs, leaseUntilMs: nowMs + (this.deps.leaseMs ?? LEASE_MS), node: this.node });
  }

  private send(delivery: ClaimedDelivery, hook: HookToSend): void {
    this.inFlight++;
    this.perHook.set(hook.id, (this.perHook.get(hook.id) ?? 0) + 1);
    this.perSite.set(delivery.site_id, (this.perSite.get(delivery.site_id) ?? 0) + 1);
    const at = new Date();
    const started = performance.now();
    const stamp = now();
    const secrets = [hook.secret];
    if (hook.previous_secret && hook.previous_secret_until && hook.previous_secret_until > stamp) secrets.push(hook.previous_secret);
    const headers = {
      'content-type': 'application/json',
      'user-agent': 'cms-webhooks/1',
      ...signedHeaders(delivery.message_id, at, delivery.payload, secrets),
    };
    const attempted = (statusCode: number | null, error: string | null, retryAfterS?: number): Outcome => ({
      kind: 'attempt',
      delivery,
      statusCode,
      error,
      durationMs: Math.round(performance.now() - started),
      at: stamp,
      retryAfterS,
    });
    const attempt = this.deps.guard
      .fetch(hook.url, { method: 'POST', headers, body: delivery.payload, signal: this.stopping.signal })
      .then(
        (response) =>
          attempted(
            response.status,
            null,
            response.status === 429 || response.status === 503 ? retryAfterSeconds(response.headers.get('retry-after')) : undefined,
          ),
        (error: Error): Outcome => (this.stopping.signal.aborted ? { kind: 'release', delivery } : attempted(null, error.message)),
      )
      .then((outcome) => {
        this.finished.push(outcome);
        this.inFlight--;
        release(this.perHook, hook.id);
        release(this.perSite, delivery.site_id);
        this.attempts.delete(attempt);
        this.wake();
      });
    this.attempts.add(attempt);
  }

  /** Writes the results gathered since the last poll, in one transaction. */
  private async flush(): Promise<void> {
    if (this.finished.length === 0) return;
    const outcomes = inLockOrder(this.finished);
    this.finished = [];
    try {
      await this.deps.db.transaction().execute(async (trx) => {
        for (const outcome of outcomes)
          await recordOutcome(trx, outcome, { node: this.node, retrySchedule: this.deps.config.retrySchedule });
      });
    } catch (error) {
      // Not lost: the claims stand until their lease ends, and then the deliveries are sent again.
      this.deps.warn(error, 'writing webhook delivery results failed; those deliveries will be attempted again');
    }
  }
}

/** One attempt fewer in flight under `key`; the entry goes at none. */
function release(counts: Map<number, number>, key: number): void {
  const left = (counts.get(key) ?? 1) - 1;
  if (left === 0) counts.delete(key);
  else counts.set(key, left);
}
