import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import type { INestApplication, LoggerService } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { Logger } from '../logger';

/** Routes Nest's own log lines into the service's pino logger. */
export class PinoNestLogger implements LoggerService {
  constructor(private readonly logger: Logger) {}
  log(message: unknown, context?: string) {
    this.logger.debug({ context }, String(message));
  }
  error(message: unknown, trace?: string, context?: string) {
    this.logger.error({ context, trace }, String(message));
  }
  warn(message: unknown, context?: string) {
    this.logger.warn({ context }, String(message));
  }
  debug(message: unknown, context?: string) {
    this.logger.debug({ context }, String(message));
  }
  verbose(message: unknown, context?: string) {
    this.logger.trace({ context }, String(message));
  }
}

/**
 * Creates and starts a service's Nest HTTP application on `port` (0 picks a free one), with
 * shutdown hooks so SIGTERM closes connections and stops consumers cleanly.
 * `options.jsonBodyLimit` replaces body-parser's 100 kB default for JSON bodies (e.g. `'1mb'`);
 * a larger body is answered 413 before any handler runs.
 */
export async function startHttpApp(module: unknown, port: number, logger: Logger, host = '0.0.0.0', options: { jsonBodyLimit?: string | number } = {}): Promise<INestApplication> {
  const app = await NestFactory.create<NestExpressApplication>(module as never, { logger: new PinoNestLogger(logger), bodyParser: true });
  // Registered before init, so Nest skips its own JSON parser (it checks for one by name).
  if (options.jsonBodyLimit !== undefined) app.useBodyParser('json', { limit: options.jsonBodyLimit });
  app.enableShutdownHooks();
  await app.listen(port, host);
  const addr = app.getHttpServer().address();
  logger.info({ port: typeof addr === 'object' && addr ? addr.port : port }, 'http listening');
  return app;
}

/** The port an app actually listens on (useful with port 0). */
export function listeningPort(app: INestApplication): number {
  const addr = app.getHttpServer().address();
  return typeof addr === 'object' && addr ? addr.port : 0;
}
