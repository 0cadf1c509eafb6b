import { Module, type DynamicModule } from '@nestjs/common';
import { loadAssets } from './console-assets';
import { consoleSettingsFromEnv, type ConsoleSettings } from './console-settings';
import { ConsoleController } from './console.controller';
import { CONSOLE_ASSETS, CONSOLE_SETTINGS } from './console.tokens';
import { DevTokenController } from './dev-token.controller';

/**
 * The web console: static files under `/` and `/console/…` (plain HTML, ES modules and CSS, no
 * build step) and the development token endpoint. The console talks to the public API only.
 */
@Module({})
export class ConsoleModule {
  static register(settings: ConsoleSettings = consoleSettingsFromEnv()): DynamicModule {
    return {
      module: ConsoleModule,
      // The token route first, so the `console/*path` wildcard does not shadow it.
      controllers: [DevTokenController, ConsoleController],
      providers: [
        { provide: CONSOLE_SETTINGS, useValue: settings },
        { provide: CONSOLE_ASSETS, useFactory: () => loadAssets(settings.publicDir) },
      ],
    };
  }
}
