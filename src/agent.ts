import pino, { type Logger } from 'pino';
import type { Config } from './config.js';
import { LOG_REDACT_PATHS, REDACTED } from './rules/redaction.js';

export function createLogger(config: Pick<Config, 'logLevel'>, destination?: pino.DestinationStream): Logger {
  return pino(
    { level: config.logLevel, base: { name: 'nodetruth' }, redact: { paths: LOG_REDACT_PATHS, censor: REDACTED } },
    destination,
  );
}
