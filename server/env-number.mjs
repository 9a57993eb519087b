// The numeric environment variables (PORT, CROSSTALK_*_MS, …): one rule for reading them, checked at start by npm start and the worker.
// Plain JavaScript (with server/env-number.d.mts) so scripts/start.mjs, which runs without TypeScript, shares it.

/** A bad numeric environment variable; its message names the variable and what is allowed. */
export class EnvNumberError extends Error {}

/**
 * An integer from `env[name]`: unset or empty is `fallback`; anything else must be an integer in [min, max], or this
 * throws an EnvNumberError naming the variable, what is allowed and what it got.
 */
export function envInt(env, name, fallback, { min = Number.MIN_SAFE_INTEGER, max = Number.MAX_SAFE_INTEGER } = {}) {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const n = Number(raw.trim());
  if (!Number.isSafeInteger(n) || n < min || n > max) throw new EnvNumberError(`${name} must be ${allowed(min, max)}, got ${JSON.stringify(raw)}`);
  return n;
}

const allowed = (min, max) =>
  min > Number.MIN_SAFE_INTEGER && max < Number.MAX_SAFE_INTEGER ? `an integer ${min}-${max}` : min > Number.MIN_SAFE_INTEGER ? (min === 0 ? 'an integer >= 0' : `an integer >= ${min}`) : max < Number.MAX_SAFE_INTEGER ? `an integer <= ${max}` : 'an integer';

/**
 * Every numeric variable the server reads, with its default (README, "Environment") and its bounds. `fallback: null`:
 * no fixed default (it is derived from another one). All are checked at start (checkEnvNumbers).
 */
export const ENV_NUMBERS = {
  PORT: { fallback: 3000, min: 0, max: 65535 },
  CROSSTALK_SHUTDOWN_GRACE_MS: { fallback: 3000, min: 0 },
  CROSSTALK_RETENTION_SWEEP_MS: { fallback: 600_000, min: 1 },
  CROSSTALK_PG_POOL: { fallback: 10, min: 1, max: 10_000 },
  CROSSTALK_PG_IDLE_TX_MS: { fallback: null, min: 1 },
  CROSSTALK_HEARTBEAT_MS: { fallback: 2000, min: 1 },
  CROSSTALK_DEAD_AFTER_MS: { fallback: 15_000, min: 1 },
  CROSSTALK_SWEEP_MS: { fallback: 250, min: 1 },
  CROSSTALK_EVENT_RETRY_MS: { fallback: 30_000, min: 0 },
  CROSSTALK_ACCEPT_RETRY_MS: { fallback: 30_000, min: 0 },
  CROSSTALK_IDEMPOTENCY_TTL_MS: { fallback: 7 * 24 * 3600_000, min: 1 },
  CROSSTALK_PAIRING_TTL_MS: { fallback: 3600_000, min: 1 },
  CROSSTALK_JOBS_SUPERVISE_S: { fallback: 2, min: 1 },
  CROSSTALK_JOBS_POLL_S: { fallback: 1, min: 1 },
  CROSSTALK_SQLITE_TURN_MS: { fallback: 5, min: 0 },
  // Negative: never (README).
  CROSSTALK_PAGES_IDLE_MS: { fallback: 300_000 },
  CROSSTALK_WARM_ROOM_MS: { fallback: 1000 },
  // 0: off; above 19 is read as 19 (scripts/thread-priority.mjs).
  CROSSTALK_HELPER_NICE: { fallback: 10, min: 0 },
};

/** One of ENV_NUMBERS, read by its rule (throws EnvNumberError). */
export function envNumber(name, env = process.env) {
  const rule = ENV_NUMBERS[name];
  if (!rule) throw new Error(`no such numeric variable ${name}`);
  return envInt(env, name, rule.fallback, rule);
}

/** Checks every one of ENV_NUMBERS; throws an EnvNumberError for the first bad one. */
export function checkEnvNumbers(env = process.env) {
  for (const name of Object.keys(ENV_NUMBERS)) envNumber(name, env);
}
