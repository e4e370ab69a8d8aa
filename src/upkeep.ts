/** How often each node runs its upkeep (history retention, old webhook deliveries): a run that finds nothing to remove removes nothing. */
export const UPKEEP_EVERY_MS = 60 * 60 * 1000;

/**
 * When a node first runs its upkeep after it starts: between one and five minutes, at random.
 * Not at once, so that a fleet restarted together does not run it together while it warms up;
 * not after the first interval, so that a node restarted more often than hourly still runs it.
 */
export function firstUpkeepDelayMs(): number {
  return 60_000 + Math.random() * 4 * 60_000;
}
