// Times the report page in headless Chromium: navigation start to the page's
// ready flag (window.ndgcReport.readyMs, performance.now() when the last
// panel was drawn), over several fresh loads, and prints min, median and max.
//   node perf/report_render.mjs out/report.html [RUNS]
// Needs what the browser tests need (tools/bootstrap --tests).
import path from 'node:path';
import {statSync} from 'node:fs';
import {pathToFileURL} from 'node:url';
import '../tests/browser/available.mjs';

const {launch, openPage} = await import('../tests/browser/lib.mjs');
const file = path.resolve(process.argv[2]);
const runs = Number(process.argv[3] || 7);
const browser = await launch();
const times = [];
try {
  for (let i = 0; i < runs; i++) {
    const {page, consoleErrors} = await openPage(browser, pathToFileURL(file).href);
    if (consoleErrors.length) throw new Error(consoleErrors.join(' | '));
    times.push(await page.evaluate(() => window.ndgcReport.readyMs));
    await page.close();
  }
} finally {
  await browser.close();
}
times.sort((a, b) => a - b);
const ms = (v) => v.toFixed(0) + ' ms';
console.log(`${path.basename(file)}: ${(statSync(file).size / 1e6).toFixed(3)} MB; ready after ` +
            `${ms(times[Math.floor(runs / 2)])} (median of ${runs}; min ${ms(times[0])}, max ${ms(times[runs - 1])})`);
