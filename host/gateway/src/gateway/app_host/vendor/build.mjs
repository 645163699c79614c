// Bundles the host side of @modelcontextprotocol/ext-apps (AppBridge and its
// postMessage transport) into one ES module that mcpw builds into its binary:
// `cargo install` has no npm. zod's translated error messages are left out
// (the bridge reports in English); everything else is the package as published.
//
//   npm ci && node build.mjs
import { build } from "esbuild";
import { readFileSync } from "node:fs";

const version = JSON.parse(readFileSync("node_modules/@modelcontextprotocol/ext-apps/package.json", "utf8")).version;
const noLocales = {
  name: "no-locales",
  setup(b) {
    b.onResolve({ filter: /locales\/index\.js$/ }, (a) => ({ path: a.path, namespace: "empty" }));
    b.onLoad({ filter: /.*/, namespace: "empty" }, () => ({ contents: "export {}", loader: "js" }));
  },
};
await build({
  stdin: {
    contents: 'export { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";',
    resolveDir: ".",
  },
  bundle: true,
  format: "esm",
  minify: true,
  legalComments: "eof",
  banner: { js: `// @modelcontextprotocol/ext-apps ${version} (MIT, see LICENSE beside this file), host side, bundled by build.mjs.` },
  outfile: "ext-apps-bridge.js",
  plugins: [noLocales],
});
