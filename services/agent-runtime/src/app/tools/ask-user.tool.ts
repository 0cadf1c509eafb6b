import { z } from 'zod';
import { ValidationError } from '@handplane/kernel';
import type { QuestionPosted } from '../model/transcript';
import { stableId } from './history';
import { invalidArgs, type Tool } from './tool';

const argsSchema = z.object({ question: z.string().min(1).max(4000) });

/**
 * `ask_user(question)`: puts a question card on the conversation (`question.asked`). The model is
 * to end its turn: the answer (`question.answered`, from the gateway) starts the next one and ends
 * any wait (G7); until then task completions stay queued (G10).
 */
export function askUserTool(): Tool {
  return async (args, ctx) => {
    const parsed = argsSchema.safeParse(args);
    if (!parsed.success) throw new ValidationError(invalidArgs('ask_user', parsed.error.issues));
    const questionId = stableId('q', ctx.runId, ctx.callId);
    ctx.decide([{ type: 'AskQuestion', data: { runId: ctx.runId, questionId, text: parsed.data.question }, metadata: { at: ctx.at, actor: ctx.userId } }]);
    const result: QuestionPosted = { questionId, status: 'asked', message: 'The question is on the conversation. End your turn now: the answer starts your next turn.' };
    return { ok: true, result, events: [] };
  };
}
