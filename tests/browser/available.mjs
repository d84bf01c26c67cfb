// Exits 77 (ctest's "skipped") with one line when the browser tests cannot
// run here: no chromium, or no playwright-core (tools/bootstrap --tests
// installs both). Import it before lib.mjs, which loads playwright-core.
import {existsSync} from 'node:fs';
import path from 'node:path';
import {fileURLToPath} from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const chromium = process.env.NDGC_CHROMIUM || '/usr/bin/chromium';
if (!existsSync(chromium) || !existsSync(path.join(here, 'node_modules', 'playwright-core'))) {
  console.log(`skipped: the browser tests need ${chromium} and tests/browser/node_modules ` +
              '(tools/bootstrap --tests installs both)');
  process.exit(77);
}
