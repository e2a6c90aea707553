// Loads a package from the front-end peers' install (KILN_FRONTENDS, an npm --prefix folder),
// so the scripts here run from the repository without a node_modules of their own.
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

const base = process.env.KILN_FRONTENDS;
if (!base) {
  console.error("KILN_FRONTENDS must name the folder the front-end packages were installed in");
  process.exit(2);
}
const require = createRequire(`${base}/`);

/** `import(name)` resolved from KILN_FRONTENDS/node_modules. */
export async function load(name) {
  return import(pathToFileURL(require.resolve(name)).href);
}
