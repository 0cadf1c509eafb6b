import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import type { INestApplication, LoggerService } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { Logger } from '../logger';
import { httpTelemetry, metricsHandler, type MetricsAccess } from '../telemetry/http';
import type { ServiceMetrics } from '../telemetry/metrics';

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
 * a larger body is answered 413 before any handler runs. `options.metrics` adds a span and counts
 * per request and `GET /metrics` (guarded by `options.metricsAccess`, default open).
 */
export async function startHttpApp(
  module: unknown,
  port: number,
  logger: Logger,
  host = '0.0.0.0',
  options: { jsonBodyLimit?: string | number; metrics?: ServiceMetrics; metricsAccess?: MetricsAccess } = {},
): Promise<INestApplication> {
  const app = await NestFactory.create<NestExpressApplication>(module as never, { logger: new PinoNestLogger(logger), bodyParser: true });
  // Before Nest's router: every request gets its span and counts, and /metrics skips the app's guards.
  if (options.metrics) {
    app.use(httpTelemetry(options.metrics));
    app.getHttpAdapter().get('/metrics', metricsHandler(options.metrics, options.metricsAccess ?? { kind: 'open' }) as never);
  }
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
