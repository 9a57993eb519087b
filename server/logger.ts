// The process logger (pino): JSON lines on stdout, level from CROSSTALK_LOG_LEVEL.
import pino from 'pino';

/** pino's levels: what CROSSTALK_LOG_LEVEL may name. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/**
 * What CROSSTALK_LOG_LEVEL is wrong with, or null (unset or empty: the default). Checked at start by the config
 * (server/config.ts), so a bad level stops the start with this line instead of pino's stack trace.
 */
export function logLevelProblem(env: Record<string, string | undefined> = process.env): string | null {
  const v = env.CROSSTALK_LOG_LEVEL;
  if (!v || (LOG_LEVELS as readonly string[]).includes(v)) return null;
  return `CROSSTALK_LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(v)}`;
}

/**
 * The level from the environment. A bad one reads as `info` here: the logger is made before the config is read
 * (server/boot.ts), and the config's check then stops the start naming the variable (logLevelProblem).
 */
const envLevel = () => (process.env.CROSSTALK_LOG_LEVEL && !logLevelProblem() ? process.env.CROSSTALK_LOG_LEVEL : process.env.NODE_ENV === 'test' ? 'silent' : 'info');

export function createLogger(level: string = envLevel()) {
  return pino({ level, base: { app: 'crosstalk' } });
}
export type { Logger } from 'pino';
