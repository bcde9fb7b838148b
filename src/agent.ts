import pino, { type Logger } from 'pino';
import type { Config } from './config.js';

/** Paths pino must never print, wherever they appear in a log object. */
export const LOG_REDACT_PATHS = ['req.headers.authorization', 'headers.authorization', 'authorization', 'token', '*.token', 'password', '*.password'];

export function createLogger(config: Pick<Config, 'logLevel'>, destination?: pino.DestinationStream): Logger {
  return pino(
    { level: config.logLevel, base: { name: 'nodetruth' }, redact: { paths: LOG_REDACT_PATHS, censor: '<redacted>' } },
    destination,
  );
}
