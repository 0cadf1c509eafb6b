import type { Config } from '@handplane/contracts';
import { scriptedModel } from './scripted-model';
import type { ModelProvider } from './transcript';

/** The scripted model as a provider. */
export const scriptedProvider: ModelProvider = { next: async (transcript) => scriptedModel(transcript) };

/** The provider chosen by `MODEL_PROVIDER`. The OpenAI-compatible one arrives in a later issue. */
export function modelFromConfig(config: Pick<Config, 'MODEL_PROVIDER'>): ModelProvider {
  switch (config.MODEL_PROVIDER) {
    case 'scripted':
      return scriptedProvider;
    case 'openai':
      throw new Error('MODEL_PROVIDER=openai is not available yet: use MODEL_PROVIDER=scripted');
  }
}
