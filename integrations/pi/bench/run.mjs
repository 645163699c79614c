// Benchmark: the mcpw pi package against pi-mcp-adapter 2.36.0 in pi 1.5.2, in one run.
//   node integrations/pi/bench/run.mjs            (see bench/README.md for the variables)
// 1. Per-call time of the test server's `echo`, direct tool and `mcp` proxy call, in long-lived
//    pi processes (one per extension and exposure) that take turns: each round gives every
//    process one prompt of CALLS calls, in an order that rotates from round to round.
// 2. Load time: pi started with one extension, first (pi's code caches empty too), cold (MCP
//    metadata caches empty) and warm (second start of the cold sandbox); extensions alternate.
import { readFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { prepare, REPO } from "./setup.mjs";
import { PiProcess, toolCalls } from "./pi-process.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const FAUX = join(here, "faux-bench.ts");
const int = (name, fallback) => {
  const v = process.env[name];
  if (v === undefined || v === "") return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name}=${v}: a whole number, please`);
  return n;
};
const ROUNDS = int("ROUNDS", 5);
const CALLS = int("CALLS", 40);
const WARMUP = int("WARMUP", 10);
const LOAD_RUNS = int("LOAD_RUNS", 5);
const PROXY = process.env.PROXY !== "0";
const KEEP = process.env.KEEP === "1";

const setup = prepare();
const { config, sandbox, checkMcpw, pidsIn, markedProcesses, until } = await import("../test/harness.mjs");
const cfg = config();
checkMcpw(cfg);
if (cfg.line !== "1.x") throw new Error(`pi-mcp-adapter 2.36 loads on pi 1.x only; PI_DIR has pi ${cfg.version}`);

const benchRoot = mkdtempSync(join(tmpdir(), "mcpw-pi-bench-"));
// One TMPDIR for every pi but the "first" starts: it holds pi's code caches (jiti's transpiled
// extensions, Node's compile cache), which are not what cold and warm are about.
const sharedTmp = join(benchRoot, "tmp");
mkdirSync(sharedTmp);
const boxes = [];
const running = new Set();

const EXT = {
  mcpw: { label: "mcpw", path: process.env.EXTENSION, direct: "s__echo", proxied: "s__echo" },
  adapter: { label: "pi-mcp-adapter", path: setup.adapter, direct: "s_echo", proxied: "s_echo" },
};

/** A sandbox as the tests make them; for the adapter, server `s` gets `directTools` as asked. */
function newBox(name, ext, { directTools } = {}) {
  const box = sandbox(cfg, name);
  boxes.push(box.root);
  if (ext === "adapter" && directTools !== undefined) {
    const file = join(box.agent, "mcp.json");
    const json = JSON.parse(readFileSync(file, "utf8"));
    json.mcpServers.s.directTools = directTools;
    writeFileSync(file, JSON.stringify(json, null, 2));
  }
  return box;
}

function start(box, ext, env = {}) {
  const extensions = ext === "none" ? [FAUX] : [FAUX, EXT[ext].path];
  const pi = new PiProcess(cfg, box, { extensions, env: { TMPDIR: sharedTmp, ...env } });
  running.add(pi);
  pi.exited.then(() => running.delete(pi));
  return pi;
}

/** Closes pi and waits until no process of the sandbox is left (pi, mcpw, servers). */
async function stop(pi, box) {
  await pi.close();
  const servers = pidsIn(box.files.pids);
  await until(() => markedProcesses(box.marker).length === 0, `the processes of ${box.root} to exit`, 20_000).catch((err) => {
    for (const p of markedProcesses(box.marker)) process.kill(p.pid, "SIGKILL");
    console.error(`${err.message}; killed them`);
  });
  return servers.length;
}

const ask = (tool, args, calls) => JSON.stringify({ tool, args, calls });

/** The faux model's answer: {calls, errors, last, timings}. */
function answer(events) {
  const end = events.at(-1);
  const last = end.messages?.at(-1);
  const text = typeof last?.content === "string" ? last.content : (last?.content ?? []).map((c) => c.text ?? "").join("");
  if (!text.startsWith("done: ")) throw new Error(`unexpected answer: ${text.slice(0, 300)}`);
  return JSON.parse(text.slice(6));
}

// CPU time (utime + stime) of a sandbox's processes, by kind.
const TICK_MS = 1000 / (Number(spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).stdout) || 100);
function cpuByPid(marker) {
  const out = new Map();
  for (const p of markedProcesses(marker)) {
    try {
      const stat = readFileSync(`/proc/${p.pid}/stat`, "latin1");
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      const kind = p.cmdline.some((a) => a.endsWith("/mcpw")) ? "mcpw" : p.cmdline.some((a) => a.endsWith("misbehave.mjs")) ? "server" : "pi";
      out.set(p.pid, { kind, ms: (Number(f[11]) + Number(f[12])) * TICK_MS });
    } catch {
      // Gone.
    }
  }
  return out;
}
function cpuDelta(before, after) {
  const sum = { pi: 0, mcpw: 0, server: 0 };
  for (const [pid, { kind, ms }] of after) sum[kind] += ms - (before.get(pid)?.ms ?? 0);
  return sum;
}

const pct = (values, p) => {
  if (!values.length) return NaN;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
};
const fmt = (ms, digits = 2) => (Number.isFinite(ms) ? ms.toFixed(digits) : "-");
const pad = (s, n) => String(s).padEnd(n);
const lpad = (s, n) => String(s).padStart(n);

// ---------------------------------------------------------------------------------------------
// 1. Per-call time.
async function perCall() {
  const subjects = [
    { name: "mcpw direct", ext: "mcpw", tool: EXT.mcpw.direct, args: (m) => ({ message: m }), env: { MCPW_PI_EXPOSURE: "direct" } },
    { name: "adapter direct", ext: "adapter", tool: EXT.adapter.direct, args: (m) => ({ message: m }), directTools: true },
  ];
  if (PROXY) {
    subjects.push(
      { name: "mcpw proxy", ext: "mcpw", tool: "mcp", args: (m) => ({ tool: EXT.mcpw.proxied, args: { message: m } }), env: { MCPW_PI_EXPOSURE: "proxy" } },
      { name: "adapter proxy", ext: "adapter", tool: "mcp", args: (m) => ({ tool: EXT.adapter.proxied, args: { message: m } }), directTools: false },
    );
  }
  // Started one after the other, each warmed up (its first call connects the server).
  for (const s of subjects) {
    s.box = newBox(`call-${s.name.replace(" ", "-")}`, s.ext, { directTools: s.directTools });
    s.pi = start(s.box, s.ext, s.env);
    await s.pi.request({ type: "get_state" });
    const warm = answer(await s.pi.prompt(ask(s.tool, s.args("warm-up"), WARMUP)));
    if (warm.errors || warm.calls !== WARMUP || !/^Echo: warm-up/.test(warm.last)) {
      throw new Error(`${s.name}: warm-up failed: ${JSON.stringify(warm).slice(0, 400)}`);
    }
    s.serversAfterWarmup = pidsIn(s.box.files.pids).length;
    Object.assign(s, { ms: [], piMs: [], rpcMs: [], cpu: { pi: 0, mcpw: 0, server: 0 }, wall: 0, calls: 0 });
  }
  for (let round = 0; round < ROUNDS; round++) {
    const order = subjects.map((_, i) => subjects[(i + round) % subjects.length]);
    for (const s of order) {
      const message = `round ${round}`;
      const cpuBefore = cpuByPid(s.box.marker);
      const t0 = performance.now();
      const events = await s.pi.prompt(ask(s.tool, s.args(message), CALLS));
      const wall = performance.now() - t0;
      const cpu = cpuDelta(cpuBefore, cpuByPid(s.box.marker));
      const got = answer(events);
      if (got.errors || got.calls !== CALLS || got.last !== `Echo: ${message}`) {
        throw new Error(`${s.name}, round ${round}: ${JSON.stringify(got).slice(0, 400)}`);
      }
      const times = Object.values(got.timings);
      if (times.length !== CALLS) throw new Error(`${s.name}: ${times.length} timings for ${CALLS} calls`);
      s.ms.push(...times);
      for (const c of toolCalls(events)) {
        s.piMs.push(c.piMs);
        s.rpcMs.push(c.ms);
      }
      for (const k of Object.keys(cpu)) s.cpu[k] += cpu[k];
      s.wall += wall;
      s.calls += CALLS;
    }
  }
  for (const s of subjects) {
    s.serversInAll = await stop(s.pi, s.box);
  }
  return subjects;
}

// ---------------------------------------------------------------------------------------------
// 2. Load time.
/** One start: get_state and a prompt of one direct call are written at once; times from spawn. */
async function startOnce(ext, box, env) {
  const earlier = pidsIn(box.files.pids).length; // a warm start's sandbox has the cold start's
  const pi = start(box, ext, env);
  const state = pi.request({ type: "get_state" }, 120_000);
  const prompt = pi.prompt(ask(EXT[ext].direct, { message: "first" }, 1), { timeoutMs: 120_000 });
  const callStart = await pi.waitFor((e) => e.type === "tool_execution_start", "the first tool call", { timeoutMs: 120_000 });
  const serversAtCall = pidsIn(box.files.pids).length - earlier;
  const [stateResponse, events] = await Promise.all([state, prompt]);
  const [call] = toolCalls(events);
  const result = {
    readyMs: stateResponse.at - pi.spawnedAt,
    callStartMs: callStart.at - pi.spawnedAt,
    resultMs: call ? call.end - pi.spawnedAt : NaN,
    ok: !!call && !call.isError && call.text === "Echo: first",
    text: call?.text ?? "(no call)",
    serversAtCall,
  };
  result.serversInAll = (await stop(pi, box)) - earlier;
  return result;
}

/** pi with the scripted model only: when it answers get_state. */
async function baselineOnce(box) {
  const pi = start(box, "none");
  const state = await pi.request({ type: "get_state" }, 120_000);
  const readyMs = state.at - pi.spawnedAt;
  await stop(pi, box);
  return { readyMs };
}

async function loadTimes() {
  const env = { mcpw: { MCPW_PI_EXPOSURE: "direct" }, adapter: {} };
  const exts = ["mcpw", "adapter"];
  // Fill the shared code caches (not timed).
  for (const ext of exts) await startOnce(ext, newBox(`prime-${ext}`, ext, { directTools: true }), env[ext]);
  const runs = Object.fromEntries(exts.map((e) => [e, { first: [], cold: [], warm: [] }]));
  runs.none = [];
  const bare = newBox("baseline", "none");
  await baselineOnce(bare);
  for (let i = 0; i < LOAD_RUNS; i++) {
    runs.none.push(await baselineOnce(bare));
    for (const ext of i % 2 ? [...exts].reverse() : exts) {
      const fresh = newBox(`first-${ext}`, ext, { directTools: true });
      runs[ext].first.push(await startOnce(ext, fresh, { ...env[ext], TMPDIR: fresh.tmp }));
      const box = newBox(`load-${ext}`, ext, { directTools: true });
      runs[ext].cold.push(await startOnce(ext, box, env[ext]));
      runs[ext].warm.push(await startOnce(ext, box, env[ext]));
    }
  }
  return runs;
}

// ---------------------------------------------------------------------------------------------
const t0 = Date.now();
const load0 = loadavg();
console.log(`mcpw pi package benchmark — ${new Date().toISOString()}`);
console.log(`pi ${cfg.version} (${cfg.cli}), node ${spawnSync(cfg.node, ["--version"], { encoding: "utf8" }).stdout.trim()} (${cfg.node})`);
console.log(`mcpw package ${setup.packageVersion} (${process.env.EXTENSION}); pi-mcp-adapter ${setup.adapterVersion} (${setup.adapter})`);
for (const note of setup.notes) console.log(note);
console.log(`server: node ${cfg.misbehave} ok, tool echo; ROUNDS=${ROUNDS} CALLS=${CALLS} WARMUP=${WARMUP} LOAD_RUNS=${LOAD_RUNS}; load average ${load0.map((l) => l.toFixed(2)).join(" ")}`);

let failed = false;
try {
  const subjects = ROUNDS && CALLS ? await perCall() : [];
  const runs = LOAD_RUNS ? await loadTimes() : undefined;

  if (subjects.length) {
    console.log(`\n## Per call (${ROUNDS} rounds × ${CALLS} calls each, long-lived pi per row, rows take turns; ms)`);
    console.log("time in pi = tool_execution_start → tool_execution_end as pi's agent loop dispatches them (see README)");
    console.log(`${pad("", 15)}${lpad("p50", 8)}${lpad("p90", 8)}${lpad("p99", 8)}${lpad("max", 8)}${lpad("mean", 8)} │${lpad("execute p50", 12)} │${lpad("RPC p50", 8)}${lpad("p99", 7)}${lpad("0s", 4)} │ CPU ms/call: ${lpad("pi", 5)}${lpad("mcpw", 6)}${lpad("server", 7)}${lpad("all", 6)} │ wall/call  servers`);
    for (const s of subjects) {
      const mean = s.ms.reduce((a, b) => a + b, 0) / s.ms.length;
      const per = (v) => v / s.calls;
      const cpuAll = s.cpu.pi + s.cpu.mcpw + s.cpu.server;
      console.log(`${pad(s.name, 15)}${lpad(fmt(pct(s.ms, 50)), 8)}${lpad(fmt(pct(s.ms, 90)), 8)}${lpad(fmt(pct(s.ms, 99)), 8)}${lpad(fmt(Math.max(...s.ms)), 8)}${lpad(fmt(mean), 8)} │${lpad(fmt(pct(s.piMs, 50), 0), 12)} │${lpad(fmt(pct(s.rpcMs, 50)), 8)}${lpad(fmt(pct(s.rpcMs, 99)), 7)}${lpad(s.rpcMs.filter((x) => x < 0.05).length, 4)} │ ${pad("", 13)}${lpad(fmt(per(s.cpu.pi)), 5)}${lpad(fmt(per(s.cpu.mcpw)), 6)}${lpad(fmt(per(s.cpu.server)), 7)}${lpad(fmt(per(cpuAll)), 6)} │ ${lpad(fmt(per(s.wall)), 8)}  ${s.serversAfterWarmup}/${s.serversInAll}`);
    }
    const by = Object.fromEntries(subjects.map((s) => [s.name, s]));
    for (const mode of ["direct", "proxy"]) {
      const m = by[`mcpw ${mode}`];
      const a = by[`adapter ${mode}`];
      if (!m || !a) continue;
      console.log(`ratio adapter/mcpw, ${mode}: p50 ${fmt(pct(a.ms, 50) / pct(m.ms, 50))}, p99 ${fmt(pct(a.ms, 99) / pct(m.ms, 99))}, CPU/call ${fmt((a.cpu.pi + a.cpu.mcpw + a.cpu.server) / (m.cpu.pi + m.cpu.mcpw + m.cpu.server))}`);
    }
    console.log("execute p50: pi's own durationMs (around the tool's execute() only, whole ms). RPC: the same two events as they arrive on pi's stdout;");
    console.log("0s: calls whose start and end arrived together (pi's stdout writes are chained, so RPC times are a poor clock for short calls).");
    console.log("CPU ms/call: CPU time of the row's processes (pi, mcpw serve, the server) over its rounds, per call: a call plus the faux model's next turn.");
    console.log("servers: server processes started after warm-up / in all (more than 1: the server was restarted).");
  }

  if (runs) {
    console.log(`\n## Load (${LOAD_RUNS} starts each, extensions alternating; p50 ms from spawning pi, [min–max])`);
    console.log("ready = pi answers get_state; call = the first prompt's first tool call starts; result = its result is in");
    console.log("(get_state and the prompt are written to pi's stdin at spawn)");
    console.log(`${pad("", 27)}${lpad("ready", 20)}${lpad("call", 20)}${lpad("result", 20)}   servers before call / in all   first call ok`);
    const range = (v) => `${fmt(pct(v, 50), 0)} [${fmt(Math.min(...v), 0)}–${fmt(Math.max(...v), 0)}]`;
    const counts = (v) => [...new Set(v)].sort().join(",");
    for (const state of ["first", "cold", "warm"]) {
      for (const ext of ["mcpw", "adapter"]) {
        const r = runs[ext][state];
        const ok = r.filter((x) => x.ok).length;
        const bad = r.find((x) => !x.ok);
        console.log(`${pad(`${state} ${EXT[ext].label}`, 27)}${lpad(range(r.map((x) => x.readyMs)), 20)}${lpad(range(r.map((x) => x.callStartMs)), 20)}${lpad(range(r.map((x) => x.resultMs)), 20)}   ${lpad(counts(r.map((x) => x.serversAtCall)), 10)} / ${pad(counts(r.map((x) => x.serversInAll)), 14)}   ${ok}/${r.length}${bad ? ` (e.g. "${bad.text.slice(0, 120)}")` : ""}`);
      }
    }
    console.log(`${pad("pi alone (model only)", 27)}${lpad(range(runs.none.map((x) => x.readyMs)), 20)}`);
    console.log("first = empty MCP metadata caches and empty pi code caches (jiti, Node compile cache: own TMPDIR); cold = empty MCP metadata caches");
    console.log("(mcpw: $HOME/.cache/mcpw; adapter: <agent dir>/mcp-cache.json); warm = the cold sandbox started again");
  }
  const results = { date: new Date().toISOString(), pi: cfg.version, mcpw: process.env.MCPW_BIN, rounds: ROUNDS, calls: CALLS,
    perCall: subjects.map(({ name, ms, piMs, rpcMs, cpu, wall, calls, serversAfterWarmup, serversInAll }) => ({ name, ms, piMs, rpcMs, cpu, wall, calls, serversAfterWarmup, serversInAll })),
    load: runs };
  const out = join(REPO, "target/bench");
  mkdirSync(out, { recursive: true });
  const file = join(out, `pi-bench-${results.date.replace(/[:.]/g, "-")}.json`);
  writeFileSync(file, JSON.stringify(results));
  console.log(`\nraw numbers: ${file}`);
} catch (err) {
  failed = true;
  console.log(`FAILED: ${err?.stack ?? err}`);
} finally {
  for (const pi of running) pi.kill();
}
console.log(`load average ${loadavg().map((l) => l.toFixed(2)).join(" ")} (at start ${load0.map((l) => l.toFixed(2)).join(" ")}); ${((Date.now() - t0) / 1000).toFixed(0)} s`);
if (failed || KEEP) console.log(`sandboxes kept: ${benchRoot} ${boxes.join(" ")}`);
else for (const dir of [benchRoot, ...boxes]) rmSync(dir, { recursive: true, force: true });
process.exit(failed ? 1 : 0);
