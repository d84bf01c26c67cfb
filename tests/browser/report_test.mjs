// The report pages end to end, in headless Chromium (issue 42):
//   1. ndgc-train --compare --leak model --memory-every: report.html loads
//      offline with no console error and no request; the timeline has the
//      leak's series; leak.cpp's square() line heads the leak table, and
//      clicking it highlights its band; the diff from the first snapshot to
//      the last names both LEAK lines of leak.cpp.
//   2. ndgc-report on a snapshot whose names are markup: no script runs, no
//      element is made of them.
//   3. ndgc-serve's live page (/v2/debug/ui): 401 without the token; with it,
//      the translator leak's site grows under --autoclose off and nothing
//      grows under --autoclose on.
// Screenshots go to $NDGC_SCREENSHOT_DIR (default: the test's temp folder).
//
// Run by ctest (tests/CMakeLists.txt) with NDGC_TRAIN, NDGC_REPORT and
// NDGC_SERVE naming the programs. Exit 0 pass, 1 fail, 77 skipped (no
// chromium or no playwright-core: tools/bootstrap --tests installs both).
import './available.mjs';  // first: exits 77 where chromium or playwright-core is missing
import {spawn, execFileSync} from 'node:child_process';
import {existsSync, mkdtempSync, readFileSync, statSync, rmSync, mkdirSync} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {fileURLToPath, pathToFileURL} from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const {launch, openPage, repoRoot} = await import('./lib.mjs');

const programs = {train: process.env.NDGC_TRAIN, report: process.env.NDGC_REPORT, serve: process.env.NDGC_SERVE};
for (const [name, file] of Object.entries(programs))
  if (!file || !existsSync(file)) throw new Error(`NDGC_${name.toUpperCase()} must name the built program`);

const tmp = mkdtempSync(path.join(os.tmpdir(), 'ndgc-browser-'));
const shots = process.env.NDGC_SCREENSHOT_DIR || tmp;
mkdirSync(shots, {recursive: true});
let failures = 0;
function check(ok, what) {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) failures++;
}

// The two lines of leak.cpp marked LEAK, as the report names them.
const leakLines = readFileSync(path.join(repoRoot, 'tools', 'ndgc_train', 'leak.cpp'), 'utf8')
  .split('\n').map((text, i) => ({text, line: i + 1}))
  .filter((l) => l.text.includes('// LEAK')).map((l) => `tools/ndgc_train/leak.cpp:${l.line}`);
if (leakLines.length !== 2) throw new Error('leak.cpp should mark two lines with // LEAK');
const [squareLine, gradientLine] = leakLines;

const browser = await launch();
try {
  await trainReport();
  await hostileNames();
  await livePages();
} finally {
  await browser.close();
}
console.log(failures ? `${failures} check(s) failed; files in ${tmp}` : 'all checks passed');
if (!failures) rmSync(tmp, {recursive: true, force: true});
process.exit(failures ? 1 : 0);

// ---- 1. ndgc-train's report ------------------------------------------------------------

async function trainReport() {
  const out = path.join(tmp, 'compare');
  execFileSync(programs.train, ['--compare', '--leak', 'model', '--epochs', '3', '--limit-batches', '30',
    '--memory-every', '5', '--out', out, '--save', path.join(tmp, 'model.ndgc')], {stdio: 'ignore'});
  const file = path.join(out, 'report.html');
  const bytes = statSync(file).size;
  check(bytes <= 1_000_000, `the 3-epoch --compare page is ${(bytes / 1e6).toFixed(3)} MB (at most 1 MB)`);
  const started = Date.now();
  const {page, consoleErrors, requests, dialogs} = await openPage(browser, pathToFileURL(file).href);
  console.log(`     rendered in ${Date.now() - started} ms (navigation to ready)`);
  check(consoleErrors.length === 0, `no console error (${consoleErrors.join(' | ')})`);
  check(requests.length === 0, `no network request (${requests.join(' ')})`);
  check(dialogs.length === 0, 'no dialog');

  const runs = await page.evaluate(() => [...document.querySelectorAll('#run-select option')].map((o) => o.textContent));
  check(['off', 'on', 'workspace'].every((r) => runs.includes(r)), `a run per configuration (${runs.join(', ')})`);
  await page.evaluate(() => window.ndgcReport.selectRun(0));  // off: the leak grows
  const series = await page.evaluate(() => window.ndgcReport.timelineSeries().map((s) => s.label));
  check(series.includes(squareLine) && series.includes(gradientLine),
        `the timeline has both leak sites among its series (${series.length} series)`);
  const rows = await page.evaluate(() => window.ndgcReport.leakRows());
  check(rows[0] === squareLine, `the leak table's first row is ${squareLine} (got ${rows[0]})`);
  await page.click(`#leak-table tbody tr[data-site="${squareLine}"]`);
  const highlighted = await page.evaluate(() => window.ndgcReport.highlightedSite());
  const focused = await page.evaluate(() => window.ndgcReport.timelineSeries().filter((s) => s.focused).map((s) => s.label));
  check(highlighted === squareLine && focused.length === 1 && focused[0] === squareLine,
        `clicking it highlights its band (${highlighted}; focused ${focused.join(', ')})`);
  await page.screenshot({path: path.join(shots, 'report.png'), fullPage: true});

  await page.evaluate(() => {
    const n = document.querySelectorAll('#diff-from option').length;
    window.ndgcReport.setDiff(0, n - 1);
  });
  const diff = await page.evaluate(() => window.ndgcReport.diffRows().map((r) => r.site));
  check(diff.includes(squareLine) && diff.includes(gradientLine),
        `the diff from the first snapshot to the last names both leak.cpp lines (${diff.slice(0, 4).join(', ')})`);

  await page.evaluate(() => window.ndgcReport.selectRun(1));  // on: nothing grows, auto-close closed it
  const onRow = await page.evaluate((site) => {
    const tr = document.querySelector(`#leak-table tbody tr[data-site="${site}"]`);
    return tr ? [...tr.cells].map((c) => c.textContent) : null;
  }, squareLine);
  check(onRow !== null && onRow[1] === '0' && /by auto-close/.test(onRow[7]),
        `with auto-close on, the leak site holds 0 arrays and shows what auto-close reclaimed (${onRow})`);
  await page.close();
}

// ---- 2. names are text ---------------------------------------------------------------------

async function hostileNames() {
  const file = path.join(tmp, 'hostile.html');
  execFileSync(programs.report, [path.join(here, 'inputs', 'hostile-snapshot.json'), '-o', file], {stdio: 'ignore'});
  const {page, consoleErrors, requests, dialogs} = await openPage(browser, pathToFileURL(file).href);
  check(dialogs.length === 0, `markup in names runs no script (${dialogs.join(' | ')})`);
  check(requests.length === 0, `and loads nothing (${requests.join(' ')})`);
  check(consoleErrors.length === 0, `no console error (${consoleErrors.join(' | ')})`);
  const made = await page.evaluate(() => document.querySelectorAll('img, b, script:not([nonce]):not([type])').length);
  check(made === 0, 'no element is made of a name');
  const shown = await page.evaluate(() => document.body.textContent.includes('<img src=x onerror=alert(1)>'));
  check(shown, 'the manager named <img src=x onerror=alert(1)> is shown as text');
  await page.close();
}

// ---- 3. the live page ---------------------------------------------------------------------

async function livePages() {
  const token = 'browser-test-token';
  for (const autoclose of ['off', 'on']) {
    const server = await startServer(token, autoclose);
    try {
      const ui = `${server.base}/v2/debug/ui`;
      const refused = await fetch(ui);
      check(refused.status === 401, `--autoclose ${autoclose}: /v2/debug/ui without the token is 401`);
      const {page, consoleErrors, requests} = await openPage(browser, ui, {httpCredentials: {username: 'admin', password: token}});
      await infer(server, 30);
      await page.waitForFunction(() => window.ndgcReport.live().samples >= 3, null, {timeout: 15000});
      await new Promise((r) => setTimeout(r, 2500));  // two more polls after the last request
      const live = await page.evaluate(() => window.ndgcReport.live());
      const grown = live.growing.filter((g) => g.arrays > 0);
      if (autoclose === 'off') {
        check(grown.some((g) => g.arrays >= 30), `--autoclose off: the translator's site grew by 30 arrays or more ` +
              `(${grown.map((g) => `${g.site} +${g.arrays}`).join(', ')})`);
        const bytes = live.bytes;
        check(bytes[bytes.length - 1] > bytes[0], `--autoclose off: bytes climb (${bytes[0]} to ${bytes[bytes.length - 1]})`);
        await page.screenshot({path: path.join(shots, 'live-off.png'), fullPage: true});
      } else {
        check(grown.length === 0, `--autoclose on: nothing grows (${grown.map((g) => g.site).join(', ')})`);
      }
      check(consoleErrors.length === 0, `--autoclose ${autoclose}: no console error (${consoleErrors.join(' | ')})`);
      check(requests.every((u) => u.startsWith(server.base)), '  and requests only to its own server');
      check(requests.every((u) => !u.includes(token)), '  and the token in no URL');
      await page.close();
    } finally {
      server.child.kill('SIGTERM');
      await new Promise((r) => server.child.once('exit', r));
    }
  }
}

function startServer(token, autoclose) {
  const model = path.join(tmp, 'model.ndgc');
  const child = spawn(programs.serve, ['--model', `fashion=${model}`, '--port', '0', '--admin-token', token,
    '--leak', 'translator', '--autoclose', autoclose], {stdio: ['ignore', 'pipe', 'inherit']});
  return new Promise((resolve, reject) => {
    let text = '';
    child.stdout.on('data', (d) => {
      text += d;
      const m = text.match(/listening on (http:\/\/[^\s]+)/);
      if (m) resolve({child, base: m[1]});
    });
    child.once('exit', (code) => reject(new Error(`ndgc-serve exited with ${code}: ${text}`)));
  });
}

// `count` inference requests of one row each, one after the other.
async function infer(server, count) {
  const meta = await (await fetch(`${server.base}/v2/models/fashion`)).json();
  const input = meta.inputs[0];
  const shape = input.shape.map((d) => (d < 0 ? 1 : d));
  const size = shape.reduce((a, b) => a * b, 1);
  const body = JSON.stringify({inputs: [{name: input.name, shape, datatype: input.datatype,
    data: Array.from({length: size}, (_, i) => (i % 7) / 7)}]});
  for (let i = 0; i < count; i++) {
    const r = await fetch(`${server.base}/v2/models/fashion/infer`, {method: 'POST', body,
      headers: {'content-type': 'application/json'}});
    if (r.status !== 200) throw new Error(`infer: ${r.status} ${await r.text()}`);
  }
}
