import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { waitFor } from '@handplane/testing';
import { ARTIFACTS, consolePage, launchChromium, signInWithToken } from './browser';
import { startCliStack } from './cli-stack';
import { Api } from './client';

/**
 * The console shows a command blocked on a prompt (`task.awaiting_input`) on its task card with an
 * input box; answering there writes the task's stdin and the command completes. Headless Chromium
 * against every service in-process (real NATS, Postgres and runner).
 */
describe('web console: a prompt and its answer (e2e, headless Chromium)', () => {
  let stack: Awaited<ReturnType<typeof startCliStack>>;
  let browser: Browser;
  let page: Page;
  let api: Api;
  const problems: string[] = [];

  beforeAll(async () => {
    stack = await startCliStack('stdinui', { FOREGROUND_WINDOW_MS: '1500' });
    const token = (await stack.cli(['token', 'alice', 'acme'], { env: { JWT_SECRET: 'cli-test-secret' } })).stdout.toString().trim();
    api = new Api(stack.baseUrl, token);
    browser = await launchChromium();
    page = await consolePage(browser, problems);
    await signInWithToken(page, stack.baseUrl, token);
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
  }, 120_000);
  afterEach(() => {
    expect(problems).toEqual([]);
  });

  it('shows the prompt on the task card; Send answers it and the command completes', async () => {
    const conv = (await api.call('POST', '/v1/conversations', { title: 'prompts' })).json.id as string;
    await page.goto(`${stack.baseUrl}/#/c/${conv}`);
    await page.getByTestId('conversation-title').filter({ hasText: 'prompts' }).waitFor();
    await page.locator('[data-testid="connection"][data-state="live"]').waitFor();

    await page.getByTestId('composer-input').fill(`printf 'Overwrite config? [y/N] '; read a; echo "chose <$a>"`);
    await page.getByTestId('run-command').click();
    const card = page.locator('[data-testid="timeline-task"]').filter({ hasText: 'Overwrite config' });
    await card.getByTestId('task-prompt').filter({ hasText: 'Overwrite config? [y/N]' }).waitFor({ timeout: 30_000 });
    const taskId = (await card.getAttribute('data-task-id'))!;
    expect((await api.call('GET', `/v1/tasks/${taskId}`)).json.status).toBe('running');
    await page.screenshot({ path: join(ARTIFACTS, 'console-stdin-prompt.png'), fullPage: true });

    await card.getByTestId('stdin-input').fill('yes');
    await card.getByTestId('stdin-send').click();
    // Answered: the box goes, the note says who sent how much, the task finishes with the answer in its output.
    await page.getByTestId('system-note').filter({ hasText: 'alice sent 4 byte(s) of input' }).waitFor({ timeout: 15_000 });
    await page.locator(`[data-testid="task-row"][data-task-id="${taskId}"][data-status="succeeded"]`).waitFor({ timeout: 30_000 });
    expect(await card.getByTestId('stdin-form').count()).toBe(0);
    const out = await waitFor(async () => {
      const b = (await api.output(taskId)).bytes.toString();
      return b.includes('chose') ? b : undefined;
    }, 15_000, 'output');
    expect(out).toBe('Overwrite config? [y/N] chose <yes>\n');
  });

  it('Send + close ends the input: a command reading to end-of-file completes', async () => {
    const conv = (await api.call('POST', '/v1/conversations', { title: 'eof' })).json.id as string;
    await page.goto(`${stack.baseUrl}/#/c/${conv}`);
    await page.getByTestId('conversation-title').filter({ hasText: 'eof' }).waitFor();
    await page.locator('[data-testid="connection"][data-state="live"]').waitFor();
    await page.getByTestId('composer-input').fill(`printf 'Paste lines, then close: '; wc -l`);
    await page.getByTestId('run-command').click();
    const card = page.locator('[data-testid="timeline-task"]').filter({ hasText: 'Paste lines' });
    await card.getByTestId('task-prompt').waitFor({ timeout: 30_000 });
    const taskId = (await card.getAttribute('data-task-id'))!;
    await card.getByTestId('stdin-input').fill('one line');
    await card.getByTestId('stdin-close').click();
    await page.locator(`[data-testid="task-row"][data-task-id="${taskId}"][data-status="succeeded"]`).waitFor({ timeout: 30_000 });
    await page.getByTestId('system-note').filter({ hasText: 'and closed its input' }).waitFor();
    const out = await waitFor(async () => {
      const b = (await api.output(taskId)).bytes.toString();
      return b.endsWith('\n') && b.length > 'Paste lines, then close: '.length ? b : undefined;
    }, 15_000, 'output');
    expect(out).toBe('Paste lines, then close: 1\n');
  });
});
