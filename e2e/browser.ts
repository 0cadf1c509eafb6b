import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';

/** Where browser tests keep screenshots (git-ignored; CI keeps the folder as its artifacts). */
export const ARTIFACTS = join(__dirname, '..', 'artifacts');

/** Debian's Chromium, headless, with nothing that would reach the network by itself. */
export async function launchChromium(): Promise<Browser> {
  mkdirSync(ARTIFACTS, { recursive: true });
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-quic', '--no-first-run', '--disable-component-update', '--disable-sync'],
  });
}

/** A page that fails the test on any script error or CSP violation (a broken console is a blank page). */
export async function consolePage(browser: Browser, problems: string[]): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
  const page = await context.newPage();
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' && !/Failed to load resource|net::ERR_INTERNET_DISCONNECTED|ERR_NETWORK_CHANGED/.test(m.text())) problems.push(`console error: ${m.text()}`);
  });
  return page;
}

/** Signs in through the development token form (gateways outside production offer it). */
export async function signInWithDevToken(page: Page, baseUrl: string, userId: string, tenant: string): Promise<void> {
  await page.goto(`${baseUrl}/`);
  await page.getByTestId('dev-user').fill(userId);
  await page.getByTestId('dev-tenant').fill(tenant);
  await page.getByTestId('dev-sign-in').click();
  await page.getByTestId('whoami').filter({ hasText: `${userId} · ${tenant}` }).waitFor();
}

/** Signs in by pasting a token, as a user with a token from their identity provider does. */
export async function signInWithToken(page: Page, baseUrl: string, token: string): Promise<void> {
  await page.goto(`${baseUrl}/`);
  await page.getByTestId('token-input').fill(token);
  await page.getByTestId('sign-in').click();
  await page.getByTestId('whoami').waitFor();
}

/** The task row of `taskId` in the task panel once its status chip says `status`. */
export async function taskStatus(page: Page, taskId: string, status: string, timeout = 30_000): Promise<void> {
  await page.locator(`[data-testid="task-row"][data-task-id="${taskId}"][data-status="${status}"]`).waitFor({ timeout });
}

/** The sequence numbers of the timeline's items (one per conversation event shown), ascending. */
export async function timelineSeqs(page: Page): Promise<number[]> {
  const seqs = await page.$$eval('[data-testid="timeline"] > li[data-seq]', (els) => els.map((e) => Number((e as HTMLElement).dataset.seq)).filter((n) => n > 0));
  return seqs.sort((a, b) => a - b);
}
