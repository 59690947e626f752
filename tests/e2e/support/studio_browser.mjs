// Studio in a real browser: Debian's Chromium driven by playwright-core,
// against the real queryflux binary's admin port.
//
//   const browser = await launchBrowser();
//   const { page } = await openStudio(t, browser, gw.adminUrl);   // logged in
//
// Waiting is on conditions (playwright's auto-waiting locators, or
// `eventually`), never on time.
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium } from 'playwright-core';
import { waitFor } from './workers.mjs';

export const CHROMIUM = process.env.QF_CHROMIUM || '/usr/bin/chromium';
export const VIEWPORT = { width: 1280, height: 800 };

export function launchBrowser() {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/// A fresh context (its own cookies) and page at 1280x800. `problems`
/// collects uncaught page errors and Content-Security-Policy violations:
/// Studio must run under the node's CSP without any.
export async function newPage(t, browser) {
  const context = await browser.newContext({ viewport: VIEWPORT, locale: 'en-US' });
  t.after(() => context.close().catch(() => {}));
  const page = await context.newPage();
  page.setDefaultTimeout(15000);
  const problems = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' && /Content.Security.Policy|Refused to/i.test(m.text())) problems.push(`CSP: ${m.text()}`);
  });
  return { context, page, problems };
}

export async function fillLogin(page, username, password) {
  await page.getByLabel('User name', { exact: true }).fill(username);
  await page.getByLabel('Password', { exact: true }).fill(password);
  await page.getByRole('button', { name: 'Log in' }).click();
}

/// Opens Studio at `hash` and logs in as admin/admin; resolves once the
/// page's heading is there.
export async function openStudio(t, browser, adminUrl, { hash = '#/dashboard', heading = 'Dashboard' } = {}) {
  const p = await newPage(t, browser);
  await p.page.goto(`${adminUrl}/studio/${hash}`);
  await fillLogin(p.page, 'admin', 'admin');
  await p.page.getByRole('heading', { name: heading, level: 1 }).waitFor();
  return p;
}

/// Goes to a page by its hash and waits for its heading.
export async function go(page, hash, heading) {
  await page.evaluate((h) => { location.hash = h; }, hash);
  await page.getByRole('heading', { name: heading, level: 1 }).waitFor();
}

/// fn() until it returns something truthy (errors count as not yet).
export const eventually = (fn, opts = {}) => waitFor(fn, { timeoutMs: 15000, ...opts });

/// The table row Studio marks with data-cluster / data-worker.
export const clusterRow = (page, name) => page.locator(`tr[data-cluster="${name}"]`);
export const workerRow = (page, name) => page.locator(`tr[data-worker="${name}"]`);

/// Where screenshots go: QF_STUDIO_SHOTS (relative to the repository's
/// root when relative), else a temp dir.
let shotsDir;
export function screenshotDir() {
  if (!shotsDir) {
    const want = process.env.QF_STUDIO_SHOTS;
    shotsDir = want ? resolve(new URL('../../..', import.meta.url).pathname, want) : mkdtempSync(join(tmpdir(), 'qf-studio-shots-'));
    mkdirSync(shotsDir, { recursive: true });
  }
  return shotsDir;
}

/// studio-<name>.png of the viewport; asserts a 1280x800 PNG was written.
export async function screenshot(page, name) {
  const file = join(screenshotDir(), `studio-${name}.png`);
  await page.screenshot({ path: file, animations: 'disabled', caret: 'hide' });
  const png = readFileSync(file);
  assert.ok(png.length > 1000, `${file} is ${png.length} bytes`);
  assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], `${file} is a PNG`);
  assert.equal(png.readUInt32BE(16), VIEWPORT.width, `${file} width`);
  assert.equal(png.readUInt32BE(20), VIEWPORT.height, `${file} height`);
  return file;
}

