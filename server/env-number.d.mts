// Types of server/env-number.mjs (the numeric environment variables' one rule), for the TypeScript modules.
export class EnvNumberError extends Error {}
export function envInt<F extends number | null>(env: Record<string, string | undefined>, name: string, fallback: F, bounds?: { min?: number; max?: number }): number | F;
export type EnvNumberName =
  | 'PORT'
  | 'CROSSTALK_SHUTDOWN_GRACE_MS'
  | 'CROSSTALK_RETENTION_SWEEP_MS'
  | 'CROSSTALK_PG_POOL'
  | 'CROSSTALK_PG_IDLE_TX_MS'
  | 'CROSSTALK_HEARTBEAT_MS'
  | 'CROSSTALK_DEAD_AFTER_MS'
  | 'CROSSTALK_SWEEP_MS'
  | 'CROSSTALK_EVENT_RETRY_MS'
  | 'CROSSTALK_ACCEPT_RETRY_MS'
  | 'CROSSTALK_IDEMPOTENCY_TTL_MS'
  | 'CROSSTALK_PAIRING_TTL_MS'
  | 'CROSSTALK_JOBS_SUPERVISE_S'
  | 'CROSSTALK_JOBS_POLL_S'
  | 'CROSSTALK_SQLITE_TURN_MS'
  | 'CROSSTALK_PAGES_IDLE_MS'
  | 'CROSSTALK_WARM_ROOM_MS'
  | 'CROSSTALK_HELPER_NICE';
export const ENV_NUMBERS: Record<EnvNumberName, { fallback: number | null; min?: number; max?: number }>;
export function envNumber(name: 'CROSSTALK_PG_IDLE_TX_MS', env?: Record<string, string | undefined>): number | null;
export function envNumber(name: Exclude<EnvNumberName, 'CROSSTALK_PG_IDLE_TX_MS'>, env?: Record<string, string | undefined>): number;
export function checkEnvNumbers(env?: Record<string, string | undefined>): void;
