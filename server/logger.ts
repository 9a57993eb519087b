// The process logger (pino): JSON lines on stdout, level from CROSSTALK_LOG_LEVEL.
import pino from 'pino';

export function createLogger(level = process.env.CROSSTALK_LOG_LEVEL ?? (process.env.NODE_ENV === 'test' ? 'silent' : 'info')) {
  return pino({ level, base: { app: 'crosstalk' } });
}
export type { Logger } from 'pino';
