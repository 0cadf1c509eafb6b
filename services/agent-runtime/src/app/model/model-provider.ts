import type { Config } from '@handplane/contracts';
import type { RuntimeConfig } from '../../runtime-config';
import { openAiProvider } from './openai-provider';
import { scriptedModel } from './scripted-model';
import type { ModelProvider } from './transcript';

/** The scripted model as a provider. */
export const scriptedProvider: ModelProvider = { next: async (transcript) => scriptedModel(transcript) };

/** The provider chosen by `MODEL_PROVIDER`: `scripted` (no network) or `openai` (any OpenAI-compatible server). */
export function modelFromConfig(config: Pick<Config, 'MODEL_PROVIDER'>, rc: Pick<RuntimeConfig, 'OPENAI_BASE_URL' | 'OPENAI_API_KEY' | 'MODEL_NAME' | 'MODEL_TIMEOUT_MS'>): ModelProvider {
  switch (config.MODEL_PROVIDER) {
    case 'scripted':
      return scriptedProvider;
    case 'openai':
      return openAiProvider({ baseUrl: rc.OPENAI_BASE_URL, apiKey: rc.OPENAI_API_KEY, model: rc.MODEL_NAME, timeoutMs: rc.MODEL_TIMEOUT_MS });
  }
}
