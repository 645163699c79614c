// Drives real pi processes in RPC mode (JSON lines on stdin/stdout) with the faux model of
// faux-ext.ts and the mcpw extension, each in a sandbox of its own: HOME, pi's agent dir, the
// project directory and TMPDIR all under one temporary root.
import { spawnSync } from "node:child_process";
import { PiRpc } from "./pi-rpc.mjs";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
// The package under test: $EXTENSION (an installed copy), else this source tree.
export const EXTENSION = resolve(process.env.EXTENSION ?? join(here, ".."));
const FAUX = join(here, "faux-ext.ts");

export function config() {
  const need = (name) => {
    const value = process.env[name];
    if (!value) throw new Error(`set ${name} (see integrations/pi/test/README.md)`);
    return value;
  };
  const piDir = resolve(need("PI_DIR"));
  const node = process.env.NODE ? resolve(process.env.NODE) : process.execPath;
  const mcpw = resolve(need("MCPW_BIN"));
  const misbehave = resolve(need("MISBEHAVE"));
  for (const [name, path] of [["NODE", node], ["MCPW_BIN", mcpw], ["MISBEHAVE", misbehave]]) {
    if (!existsSync(path)) throw new Error(`${name}=${path} does not exist`);
  }
  // server-everything (for MCP prompts): $EVERYTHING, else beside misbehave.mjs as mcpw's tests install it.
  const everything = resolve(process.env.EVERYTHING ??
    join(dirname(misbehave), "node_modules/@modelcontextprotocol/server-everything/dist/index.js"));
  const line = findPi(piDir);
  // An MCP App server (a clock with a view), beside server-everything as mcpw's tests install it.
  const clock = resolve(process.env.APP_SERVER ??
    join(dirname(misbehave), "node_modules/@modelcontextprotocol/server-basic-vanillajs/dist/index.js"));
  // A FastMCP server of skill folders: $PYTHON runs $SKILLS_SERVER over the folders in $SKILLS_ROOT.
  const skills = ["PYTHON", "SKILLS_SERVER", "SKILLS_ROOT"].every((name) => process.env[name])
    ? { python: resolve(process.env.PYTHON), script: resolve(process.env.SKILLS_SERVER), root: resolve(process.env.SKILLS_ROOT) }
    : undefined;
  return { piDir, node, mcpw, misbehave, everything: existsSync(everything) ? everything : undefined,
    clock: existsSync(clock) ? clock : undefined, skills, ...line };
}

/** The pi CLI under PI_DIR (a directory with node_modules/, or the package itself). */
function findPi(piDir) {
  for (const [pkg, name] of [["@earendil-works/pi-coding-agent", "1.x"], ["@mariozechner/pi-coding-agent", "0.73"]]) {
    for (const dir of [join(piDir, "node_modules", pkg), piDir]) {
      const manifest = join(dir, "package.json");
      if (!existsSync(manifest)) continue;
      const json = JSON.parse(readFileSync(manifest, "utf8"));
      if (json.name !== pkg) continue;
      const bin = typeof json.bin === "string" ? json.bin : json.bin?.pi;
      return { cli: join(dir, bin), line: name, version: json.version };
    }
  }
  throw new Error(`no pi-coding-agent under PI_DIR=${piDir}`);
}

/** The extension runs `mcpw --import pi ...`: an mcpw without that option cannot be tested. */
export function checkMcpw(cfg) {
  const help = spawnSync(cfg.mcpw, ["--help"], { encoding: "utf8" }).stdout ?? "";
  if (!help.includes("--import")) throw new Error(`${cfg.mcpw} has no --import option; build a newer mcpw`);
}

/** The `/mcp…` command of the package: `/mcpw` beside pi 1.x's own `/mcp`. */
export const commandOf = (cfg) => (cfg.line === "1.x" ? "/mcpw" : "/mcp");

/**
 * A sandbox: HOME, pi's agent dir, project, TMPDIR, with the test server `s` configured where the
 * package's mcpw reads it: pi 0.73 has no MCP of its own, so mcpw imports pi's `mcp.json`
 * (pi-mcp-adapter's format); beside pi 1.x's own MCP, mcpw serves its own config
 * (`$HOME/.config/mcpw/mcp.json`). `box.config` is that file.
 */
export function sandbox(cfg, name, { everything = false, clock = false, skills = false } = {}) {
  const root = mkdtempSync(join(tmpdir(), `mcpw-pi-${name}-`));
  const dirs = { home: join(root, "home"), agent: join(root, "agent"), project: join(root, "project"), tmp: join(root, "tmp") };
  for (const dir of Object.values(dirs)) mkdirSync(dir, { recursive: true });
  const files = { pids: join(root, "server.pids"), cancel: join(root, "cancel"), methods: join(root, "methods") };
  const mcpServers = {
    s: { command: cfg.node, args: [cfg.misbehave, "ok"], env: { PID_FILE: files.pids, CANCEL_FILE: files.cancel, METHODS_FILE: files.methods } },
  };
  if (everything) mcpServers.e = { command: cfg.node, args: [cfg.everything, "stdio"] };
  if (clock) mcpServers.c = { command: cfg.node, args: [cfg.clock, "--stdio"] };
  if (skills) mcpServers.k = { command: cfg.skills.python, args: [cfg.skills.script, "k", cfg.skills.root] };
  const configFile = cfg.line === "1.x" ? join(dirs.home, ".config/mcpw/mcp.json") : join(dirs.agent, "mcp.json");
  mkdirSync(dirname(configFile), { recursive: true });
  writeFileSync(configFile, JSON.stringify({ mcpServers }, null, 2));
  const marker = `${name}-${process.pid}-${Date.now()}`;
  const env = {
    PATH: process.env.PATH,
    LANG: process.env.LANG ?? "C.UTF-8",
    HOME: dirs.home,
    PI_CODING_AGENT_DIR: dirs.agent,
    TMPDIR: dirs.tmp,
    PI_OFFLINE: "1",
    // Search by meaning is on by default: its model is never fetched from the public hub here.
    HF_ENDPOINT: process.env.HF_ENDPOINT ?? "http://127.0.0.1:9",
    MCPW_BIN: cfg.mcpw,
    MCPW_PI_TEST_RUN: marker,
  };
  const globalArgs = cfg.line === "1.x" ? [] : ["--import", "pi"];
  return { root, ...dirs, config: configFile, globalArgs, files, env, marker, mcpw: cfg.mcpw, servers: Object.keys(mcpServers) };
}

/** Fills mcpw's cache for the sandbox's servers (each started once, briefly), then forgets their pids. */
export function warmCache(box) {
  for (const server of box.servers) {
    const r = spawnSync(box.mcpw, [...box.globalArgs, "connect", server], { cwd: box.project, env: box.env, encoding: "utf8", timeout: 30_000 });
    if (r.status !== 0) throw new Error(`mcpw connect ${server} failed (${r.status}): ${r.stderr}${r.stdout}`);
  }
  writeFileSync(box.files.pids, "");
  writeFileSync(box.files.methods, "");
}

export class Pi extends PiRpc {
  constructor(cfg, box, { scenario, args = [], env = {} }) {
    super(cfg, box, { extensions: [FAUX, EXTENSION], env: { MCPW_PI_TEST_SCENARIO: scenario, ...env }, args });
  }

  /** Sends a prompt and resolves with the events of its run once agent_end arrives. */
  async prompt(message, { timeoutMs = 60_000, during } = {}) {
    const from = this.events.length;
    this.send({ id: `p${from}`, type: "prompt", message });
    const running = this.waitFor((e) => e.type === "agent_end", `agent_end of "${message}"`, { from, timeoutMs });
    if (during) await during(from);
    const end = await running;
    return { events: this.events.slice(from, this.events.indexOf(end) + 1), end };
  }

  /** Sends a slash command (handled without a run) and resolves with the UI requests it made. */
  async command(line, { settle }) {
    const from = this.events.length;
    this.send({ id: `c${from}`, type: "prompt", message: line });
    await this.waitFor((e) => e.type === "response" && e.id === `c${from}`, `response to ${line}`, { from });
    await this.waitFor((e, _i) => settle(e), `output of ${line}`, { from });
    return this.events.slice(from);
  }
}

export const toolEnds = (events) => events.filter((e) => e.type === "tool_execution_end");
export const resultText = (e) => (e.result?.content ?? []).map((c) => (c.type === "text" ? c.text : `[${c.type}]`)).join("");
export const finalText = (end) => {
  const last = end.messages?.at(-1);
  return typeof last?.content === "string" ? last.content : (last?.content ?? []).map((c) => c.text ?? "").join("");
};

/** Processes whose environment carries the sandbox's marker (pi, mcpw and the servers they start). */
export function markedProcesses(marker, exclude = []) {
  const found = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry) || exclude.includes(Number(entry))) continue;
    try {
      const environ = readFileSync(`/proc/${entry}/environ`, "latin1");
      if (!environ.split("\0").includes(`MCPW_PI_TEST_RUN=${marker}`)) continue;
      if (!isAlive(Number(entry))) continue;
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, "latin1").split("\0").filter(Boolean);
      found.push({ pid: Number(entry), cmdline });
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  return found;
}

export function mcpwServe(marker) {
  return markedProcesses(marker).filter((p) => p.cmdline.includes("serve") && p.cmdline.some((a) => a.endsWith("mcpw")));
}

/** Alive and not a zombie waiting to be reaped. */
export function isAlive(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

export function pidsIn(file) {
  return existsSync(file) ? readFileSync(file, "utf8").split("\n").filter(Boolean).map(Number) : [];
}

export function fileHas(file, text) {
  return existsSync(file) && readFileSync(file, "utf8").includes(text);
}

/**
 * Resolves once `condition()` (or the promise it returns) holds: for states only a file, /proc
 * or a port shows (a server's cancellation record, a process's exit, a listener), checked
 * every 50 ms.
 */
export function until(condition, what, timeoutMs = 15_000) {
  return new Promise((resolvePromise, reject) => {
    const started = Date.now();
    const tick = async () => {
      let ok = false;
      try {
        ok = await condition();
      } catch {}
      if (ok) return resolvePromise();
      if (Date.now() - started > timeoutMs) return reject(new Error(`timed out waiting for ${what}`));
      setTimeout(tick, 50);
    };
    tick();
  });
}
