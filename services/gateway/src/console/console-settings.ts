import { join } from 'node:path';
import { configSchema, type Config } from '@handplane/contracts';
import { DEV_JWT_SECRET } from '../app/dev-token';

/** What the web console needs from the configuration. */
export interface ConsoleSettings {
  /** Folder of the static files (index.html and console/…). */
  readonly publicDir: string;
  /** The secret the development token endpoint signs with, or false when the endpoint is refused. */
  readonly devTokens: false | { readonly secret: string };
}

// src/console and dist/console are both two levels below the service folder that holds public/.
export const DEFAULT_PUBLIC_DIR = join(__dirname, '..', '..', 'public');

/**
 * Development tokens only outside production, and only when the gateway would accept them: with a
 * JWKS and the development secret it verifies RS256 only, so an HS256 token would be useless.
 */
export function consoleSettings(config: Pick<Config, 'NODE_ENV' | 'JWT_SECRET' | 'JWKS_URL'>, publicDir = DEFAULT_PUBLIC_DIR): ConsoleSettings {
  const enabled = config.NODE_ENV !== 'production' && !(config.JWKS_URL && config.JWT_SECRET === DEV_JWT_SECRET);
  return { publicDir, devTokens: enabled ? { secret: config.JWT_SECRET } : false };
}

/**
 * The settings from the process environment, as `loadConfig()` in main.ts reads it. Parses only the
 * three fields it needs, with the same defaults, so an unrelated bad variable does not break it.
 */
export function consoleSettingsFromEnv(env: Record<string, string | undefined> = process.env): ConsoleSettings {
  return consoleSettings(configSchema.pick({ NODE_ENV: true, JWT_SECRET: true, JWKS_URL: true }).parse(env));
}
