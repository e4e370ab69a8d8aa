/** A setting that cannot be used: its message names the variable and what it must be. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}
