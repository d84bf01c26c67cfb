// Helpers for the browser tests of ndgc's report page: launch Debian's
// chromium headless through playwright-core, open a page and record what it
// does (console errors, requests, dialogs), and assemble the page from its
// template the way src/report/page.cpp does, for tests that need no C++.
import {readFileSync} from 'node:fs';
import {randomBytes} from 'node:crypto';
import {createRequire} from 'node:module';
import path from 'node:path';
import {fileURLToPath} from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const {chromium} = require(path.join(here, 'node_modules', 'playwright-core'));

export const repoRoot = path.resolve(here, '..', '..');
export const templateDir = path.join(repoRoot, 'src', 'report', 'page');
export const uplotDir = path.join(repoRoot, 'third_party', 'uplot');

export function launch() {
  return chromium.launch({
    executablePath: process.env.NDGC_CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
}

// Opens url in a fresh context and waits for window.ndgcReport.ready.
// consoleErrors: console.error messages and uncaught exceptions;
// requests: every request URL other than the page's own and data: URLs;
// dialogs: messages of alert/confirm/prompt (each dismissed at once).
export async function openPage(browser, url, {httpCredentials} = {}) {
  const context = await browser.newContext(httpCredentials ? {httpCredentials} : {});
  const page = await context.newPage();
  const consoleErrors = [];
  const requests = [];
  const dialogs = [];
  page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
  page.on('pageerror', (e) => consoleErrors.push('uncaught: ' + (e && e.message)));
  page.on('request', (r) => {
    const u = r.url();
    if (u !== url && !u.startsWith('data:')) requests.push(u);
  });
  page.on('dialog', (d) => {
    dialogs.push(d.type() + ': ' + d.message());
    d.dismiss().catch(() => {});
  });
  page.on('close', () => context.close().catch(() => {}));
  await page.goto(url);
  await page.waitForFunction(() => window.ndgcReport && window.ndgcReport.ready, null, {timeout: 15000});
  return {page, context, consoleErrors, requests, dialogs};
}

// The policy page.cpp writes: connect-src 'self' for the live page only.
export function policy(nonce, live = false) {
  return `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; img-src data:; ` +
    `connect-src ${live ? "'self'" : "'none'"}; base-uri 'none'; form-action 'none'`;
}

// The document as page.cpp embeds it: JSON with <, > and & as \u escapes.
export function embeddedData(doc) {
  const text = typeof doc === 'string' ? JSON.stringify(JSON.parse(doc)) : JSON.stringify(doc);
  return text.replace(/[<>&]/g, (c) => '\\u00' + c.charCodeAt(0).toString(16));
}

// The page as page.cpp makes it: the five placeholders filled in one pass.
export function assemble(templateDir_, uplotDir_, doc, {csp, nonce} = {}) {
  const read = (dir, name) => readFileSync(path.join(dir, name), 'utf8');
  nonce = nonce || randomBytes(16).toString('base64').slice(0, 22);
  const fills = {
    '@CSP@': csp || policy(nonce, typeof doc === 'object' && doc.source === 'live'),
    '@NONCE@': nonce,
    '@STYLE@': read(uplotDir_, 'uPlot.min.css') + '\n' + read(templateDir_, 'report.css'),
    '@DATA@': embeddedData(doc),
    '@SCRIPT@': read(uplotDir_, 'uPlot.iife.min.js') + '\n' + read(templateDir_, 'report.js'),
  };
  return read(templateDir_, 'report.html').replace(/@(CSP|NONCE|STYLE|DATA|SCRIPT)@/g, (m) => fills[m]);
}
