import pino, { type Logger } from 'pino';

export type { Logger } from 'pino';

/**
 * Structured JSON logs. Secrets never reach a log line: authorization headers, tokens,
 * secrets and command environments are redacted wherever they appear.
 */
export function createLogger(service: string, level = process.env.LOG_LEVEL ?? 'info'): Logger {
  return pino({
    name: service,
    level,
    redact: {
      paths: [
        'authorization',
        '*.authorization',
        'headers.authorization',
        '*.headers.authorization',
        'token',
        '*.token',
        'secret',
        '*.secret',
        'password',
        '*.password',
        'env',
        '*.env',
        '*.*.env',
        'JWT_SECRET',
        '*.JWT_SECRET',
      ],
      censor: '[redacted]',
    },
  });
}
