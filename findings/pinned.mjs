// What every JavaScript reproduction of findings/ shares: proof that it ran
// the release it was found on, and a verdict that no crash can fake (as
// findings/pinned.py does for the Python ones).
//
//   import { library, verdict } from '../pinned.mjs';
//   // exit 2, "not run", unless the pinned release is what imports; then its modules
//   const [{ AIMessage, trimMessages }] = await library(import.meta.url, (m) => import(m));
//   ...
//   verdict(theBehaviourIsThere);
//
// The library is imported through `load` (the script's own `import`, so
// that it resolves from the script's folder) only after its version is
// checked: a static import of a missing package would end the script with
// exit 1 before any check.
//
// Exit codes, which findings/run.sh counts apart: 10 reproduces; 11 does not
// reproduce (the pinned release ran and behaved otherwise); 2 not run (a
// pinned package missing, at another version, or failing to import);
// anything else — 1 is an uncaught error — is no verdict.
import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPRODUCES = 10;
export const DOES_NOT_REPRODUCE = 11;
export const NOT_RUN = 2;

const PINS = join(dirname(fileURLToPath(import.meta.url)), 'pins.json');
let checked = false;

function notRun(why) {
  process.stderr.write(`not run: ${why}\n`);
  process.exit(NOT_RUN);
}

function describe(e) {
  try {
    return e instanceof Error ? `${e.name}: ${e.message}` : String(e);
  } catch {
    return 'an error that cannot be shown';
  }
}

// node_modules/NAME/package.json, looked for as Node resolves a bare name:
// in the script's folder, then in each folder above.
function manifestOf(name, from) {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', name, 'package.json');
    if (existsSync(candidate)) return candidate;
    if (dirname(dir) === dir) return null;
  }
}

export async function library(scriptUrl, load) {
  const script = fileURLToPath(scriptUrl);
  const folder = basename(dirname(script));
  const pins = JSON.parse(readFileSync(PINS, 'utf8')).dirs[folder];
  if (!pins) notRun(`${PINS} pins nothing for the folder ${folder}/`);
  const install = `adapters/${pins.adapter}/run.sh --install`;
  const modules = [];
  for (const { name, version, import: specifier } of pins.packages) {
    const manifest = manifestOf(name, dirname(script));
    if (!manifest) {
      notRun(`${name} is not installed (no node_modules/${name} from ${dirname(script)} up; the finding is pinned to ${name} ${version}: ${install})`);
    }
    let installed;
    try {
      installed = JSON.parse(readFileSync(manifest, 'utf8')).version;
    } catch (e) {
      notRun(`${manifest}: ${describe(e)}`);
    }
    if (installed !== version) {
      notRun(`${name} ${installed} is installed (${dirname(manifest)}); the finding is pinned to ${version} (${install})`);
    }
    try {
      modules.push(await load(specifier));
    } catch (e) {
      notRun(`${name} ${version} is installed, but import('${specifier}') fails: ${describe(e)}`);
    }
    console.log(`library: ${name} ${version}, as pinned (${dirname(manifest)})`);
  }
  checked = true;
  return modules;
}

export function verdict(reproduced) {
  if (!checked) notRun('the reproduction reached its verdict without checking its library (call library() first)');
  console.log(reproduced ? 'verdict: reproduces'
    : 'verdict: does NOT reproduce on the pinned release (look at docs/findings.md again)');
  process.exit(reproduced ? REPRODUCES : DOES_NOT_REPRODUCE);
}
