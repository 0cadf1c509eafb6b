import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import type { INestApplication, LoggerService } from '@nestjs/common';
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
 */
export async function startHttpApp(module: unknown, port: number, logger: Logger, host = '0.0.0.0'): Promise<INestApplication> {
  const app = await NestFactory.create(module as never, { logger: new PinoNestLogger(logger), bodyParser: true });
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
