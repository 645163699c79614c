// End-to-end tests of the mcpw pi extension on a real pi (either line) with a scripted model.
//   PI_DIR=<dir with node_modules/@mariozechner|@earendil-works/pi-coding-agent> NODE=<node binary>
//   MCPW_BIN=<mcpw> MISBEHAVE=<tests' misbehave.mjs> node integrations/pi/test/run.mjs [scenario...]
// One line per scenario; exits 1 if any failed.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createConnection, createServer } from "node:net";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import {
  Pi, checkMcpw, commandOf, config, fileHas, finalText, isAlive, markedProcesses, mcpwServe, pidsIn, resultText, sandbox, toolEnds, until, warmCache,
} from "./harness.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const cfg = config();

/** A free loopback port (bound, then released). */
function freePort() {
  return new Promise((done, fail) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => done(port));
    }).on("error", fail);
  });
}

/** Whether something accepts connections on the loopback port. */
function canConnect(port) {
  return new Promise((done) => {
    const socket = createConnection({ port, host: "127.0.0.1" }, () => {
      socket.destroy();
      done(true);
    }).on("error", () => done(false));
  });
}
checkMcpw(cfg);
const notes = [];
const running = new Set();
const boxes = [];

function newBox(name, options) {
  const made = sandbox(cfg, name, options);
  boxes.push(made.root);
  return made;
}

function start(box, options) {
  const pi = new Pi(cfg, box, options);
  running.add(pi);
  pi.exited.then(() => running.delete(pi));
  return pi;
}

const isLine15 = cfg.line === "1.x";
/** The package's command: `/mcp`, or `/mcpw` beside pi's own. */
const cmd = commandOf(cfg);

const scenarios = {
  /** proxy: search, then call through the one `mcp` tool; /mcp status and /mcp tools answer. */
  async proxy() {
    const box = newBox("proxy");
    warmCache(box);
    // pi 1.x runs the servers of its own mcp.json itself: mcpw leaves them, and pi's MCP, alone.
    const ownPids = join(box.root, "own.pids");
    if (isLine15) {
      const own = { command: cfg.node, args: [cfg.misbehave, "ok"], env: { PID_FILE: ownPids } };
      writeFileSync(join(box.agent, "mcp.json"), JSON.stringify({ mcpServers: { own } }));
    }
    const pi = start(box, { scenario: "proxy" });
    const { events, end } = await pi.prompt("find the echo tool and echo hello");
    const [search, callEcho] = toolEnds(events);
    const footer = pi.events.findLast((e) => e.type === "extension_ui_request" && e.method === "setStatus" && e.statusKey === "mcpw");
    assert.equal(footer?.statusText, "mcpw: 1 tool");
    assert.equal(search?.toolName, "mcp");
    assert.match(resultText(search), /s__echo/, "the search found s__echo");
    assert.equal(callEcho?.isError, false, resultText(callEcho));
    assert.equal(resultText(callEcho), "Echo: hello proxy");
    assert.match(finalText(end), /Echo: hello proxy/, "the echo reached the model");
    const status = await pi.command(`${cmd} status`, { settle: (e) => e.type === "extension_ui_request" && e.method === "notify" });
    const note = status.find((e) => e.method === "notify");
    assert.match(note.message, /^mcpw \(proxy\): serve running, pid \d+/);
    assert.match(note.message, /\ns: /, "status names server s");
    const listed = await pi.command(`${cmd} tools`, { settle: (e) => e.type === "extension_ui_request" && e.method === "notify" });
    assert.match(listed.find((e) => e.method === "notify").message, /^1 mcpw tools:\nmcp: /);
    if (isLine15) {
      assert.doesNotMatch(resultText(search), /own/, "mcpw does not serve pi's own servers");
      assert.doesNotMatch(note.message, /\nown: /);
      await until(() => pidsIn(ownPids).length > 0, "pi's own MCP starting its server");
    }
    const stderr = pi.stderr;
    await pi.close();
    assert.doesNotMatch(stderr, /built-in extension `mcp` was not loaded/, "pi keeps its own MCP");
    return `search + call through mcp; model saw "${finalText(end)}"${isLine15 ? `; pi's own MCP ran its server beside ${cmd}` : ""}`;
  },

  /** tool-search: ToolSearch loads s__echo, which the model calls in the same prompt (and the next). */
  async "tool-search"() {
    const box = newBox("toolsearch");
    warmCache(box);
    const pi = start(box, { scenario: "tool-search", env: { MCPW_PI_EXPOSURE: "tool-search" } });
    const first = await pi.prompt("load echo and call it");
    const [search, sameEcho] = toolEnds(first.events);
    assert.equal(search?.toolName, "ToolSearch");
    assert.match(resultText(search), /s__echo/);
    assert.deepEqual(search.result.details.toolsAdded, ["s__echo"]);
    // 0.73 is told that the tool is callable from the next prompt on.
    assert.equal(/can be called from the next user message on/.test(resultText(search)), !isLine15, resultText(search));
    const second = await pi.prompt("call echo again");
    const [nextEcho] = toolEnds(second.events);
    assert.equal(nextEcho?.isError, false, resultText(nextEcho));
    assert.equal(resultText(nextEcho), "Echo: loaded in the next prompt");
    const stderr = pi.stderr;
    await pi.close();
    assert.doesNotMatch(stderr, /built-in extension `mcp` was not loaded/, "pi keeps its own MCP");
    const same = `same prompt: isError=${sameEcho.isError} "${resultText(sameEcho)}"`;
    if (isLine15) {
      assert.equal(sameEcho.isError, false, resultText(sameEcho));
      assert.equal(resultText(sameEcho), "Echo: loaded in the same prompt");
    } else {
      // pi 0.73 fixes a run's tool list when the run starts: a tool registered during the run is
      // callable from the next prompt on.
      assert.equal(sameEcho.isError, true);
      assert.match(resultText(sameEcho), /not found/);
      notes.push(`tool-search on ${cfg.line}: a tool loaded by ToolSearch is callable from the next prompt; ${same}`);
    }
    return `${same}; next prompt: "${resultText(nextEcho)}"`;
  },

  /** trust: a project's .mcp.json waits; pi's dialogue approves it; its tool joins and works. */
  async trust() {
    const box = newBox("trust");
    warmCache(box);
    const pids = join(box.root, "project.pids");
    const t = { command: cfg.node, args: [cfg.misbehave, "ok"], env: { PID_FILE: pids } };
    writeFileSync(join(box.project, ".mcp.json"), JSON.stringify({ mcpServers: { t } }));
    const pi = start(box, { scenario: "trust", env: { MCPW_PI_EXPOSURE: "direct" } });
    const ask = await pi.waitFor((e) => e.type === "extension_ui_request" && e.method === "confirm", "the trust dialogue");
    assert.match(ask.message, /^t: .*misbehave\.mjs ok$/m, ask.message);
    // Everything the approval covers is shown, secrets masked.
    assert.match(ask.message, /^  env: PID_FILE=\*\*\*\*$/m, ask.message);
    assert.equal(pidsIn(pids).length, 0, "nothing of the project ran before approval");
    const from = pi.events.length;
    pi.send({ type: "extension_ui_response", id: ask.id, confirmed: true });
    await pi.waitFor((e) => e.method === "notify" && /Approved t\./.test(e.message ?? ""), "the approval", { from });
    // The running mcpw follows its config: the project's tools join pi's.
    await pi.waitFor((e) => e.method === "setStatus" && e.statusKey === "mcpw" && e.statusText === "mcpw: 22 tools", "t's tools", { from });
    const { events, end } = await pi.prompt("echo through the project's server");
    const [echo] = toolEnds(events);
    assert.equal(echo?.isError, false, resultText(echo));
    assert.equal(resultText(echo), "Echo: approved in pi");
    assert.ok(pidsIn(pids).length > 0);
    await pi.close();
    return `asked "${ask.title}"; approved; t__echo: "${finalText(end)}"`;
  },

  /** approve: mcpw's approval of a call is asked through pi's dialogue; allowed once, then denied. */
  async approve() {
    const box = newBox("approve");
    warmCache(box);
    const own = join(box.home, ".config/mcpw/mcp.json");
    mkdirSync(dirname(own), { recursive: true });
    const mcpwConfig = box.config === own ? JSON.parse(readFileSync(own, "utf8")) : {};
    writeFileSync(own, JSON.stringify({ ...mcpwConfig, settings: { approve: "all" } }));
    const pi = start(box, { scenario: "approve", env: { MCPW_PI_EXPOSURE: "direct" } });
    const answer = (label) => async (from) => {
      const ask = await pi.waitFor((e) => e.type === "extension_ui_request" && e.method === "select", "the approval", { from });
      assert.match(ask.title, /Allow the agent to call s__echo/);
      assert.ok(ask.options.includes(label), ask.options.join(" | "));
      pi.send({ type: "extension_ui_response", id: ask.id, value: label });
      return ask;
    };
    const allowed = await pi.prompt("echo, allowed once", { during: answer("Allow once") });
    assert.equal(resultText(toolEnds(allowed.events)[0]), "Echo: allowed once");
    const denied = await pi.prompt("echo, denied", { during: answer("Deny") });
    const [refused] = toolEnds(denied.events);
    assert.equal(refused?.isError, true);
    assert.match(resultText(refused), /the user denied this call of s__echo/);
    const calls = readFileSync(box.files.methods, "utf8").split("\n").filter((m) => m === "tools/call");
    assert.equal(calls.length, 1, "the denied call never reached the server");
    await pi.close();
    return `allowed once: "${resultText(toolEnds(allowed.events)[0])}"; then "${resultText(refused)}"`;
  },

  /** cold start: nothing cached, direct exposure; the first prompt's first call works. */
  async cold() {
    const box = newBox("cold");
    const pi = start(box, { scenario: "cold", args: ["--mcpw-exposure", "direct"] });
    const { events, end } = await pi.prompt("echo at once");
    const [echo] = toolEnds(events);
    assert.equal(echo?.toolName, "s__echo");
    assert.equal(echo.isError, false, resultText(echo));
    assert.equal(resultText(echo), "Echo: cold start");
    assert.match(finalText(end), /Echo: cold start/);
    await pi.close();
    return `empty cache; first call: "${resultText(echo)}"`;
  },

  /** abort: the prompt is aborted while s__hang runs; the server sees the cancellation. */
  async abort() {
    const box = newBox("abort");
    warmCache(box);
    const pi = start(box, { scenario: "abort", env: { MCPW_PI_EXPOSURE: "direct" } });
    const started = Date.now();
    const { events, end } = await pi.prompt("hang", {
      during: async () => {
        await until(() => fileHas(box.files.methods, "tools/call"), "the server to receive the call");
        pi.send({ type: "abort" });
      },
    });
    const last = end.messages?.at(-1);
    assert.equal(last?.stopReason, "aborted", `last message: ${JSON.stringify(last)?.slice(0, 300)}`);
    const [hang] = toolEnds(events);
    assert.equal(hang?.toolName, "s__hang");
    assert.equal(hang.isError, true);
    await until(() => fileHas(box.files.cancel, "cancelled"), "the server to record the cancellation");
    const took = Date.now() - started;
    await pi.close();
    return `prompt ended "aborted" (tool result "${resultText(hang)}"), server recorded the cancellation; ${took} ms`;
  },

  /** crash: mcpw serve is killed between two prompts; the next call respawns it and works. */
  async crash() {
    const box = newBox("crash");
    warmCache(box);
    const pi = start(box, { scenario: "crash", env: { MCPW_PI_EXPOSURE: "direct" } });
    // With a warm cache the tools are known before the first prompt and no server is started.
    const listed = await pi.command(`${cmd} tools`, { settle: (e) => e.type === "extension_ui_request" && e.method === "notify" });
    const cached = JSON.parse(spawnSync(box.mcpw, ["--import", "pi", "tools", "--exposure", "direct", "--json"],
      { cwd: box.project, env: box.env, encoding: "utf8" }).stdout).tools.length;
    assert.ok(cached >= 10, `the cache holds the server's tools (${cached})`);
    assert.match(listed.find((e) => e.method === "notify").message, new RegExp(`^${cached} mcpw tools:\n(.*\n)*s__echo: Echoes back the message`));
    assert.deepEqual(pidsIn(box.files.pids), [], "no server started before the first call");
    const first = await pi.prompt("echo");
    assert.equal(resultText(toolEnds(first.events)[0]), "Echo: before the crash");
    const [serve] = mcpwServe(box.marker);
    assert.ok(serve, "an mcpw serve process runs");
    process.kill(serve.pid, "SIGKILL");
    await until(() => !isAlive(serve.pid), "mcpw serve to die");
    const second = await pi.prompt("echo again");
    const [echo] = toolEnds(second.events);
    assert.equal(echo?.isError, false, resultText(echo));
    assert.equal(resultText(echo), "Echo: after the crash");
    const [again] = mcpwServe(box.marker);
    assert.ok(again && again.pid !== serve.pid, "a new mcpw serve runs");
    await pi.close();
    return `killed mcpw ${serve.pid}; next call "${resultText(echo)}" through new mcpw ${again.pid}`;
  },

  /** shutdown: no mcpw or server outlives pi, whether pi quits or is killed with SIGKILL. */
  async shutdown() {
    const results = [];
    for (const how of ["quit", "kill -9"]) {
      const box = newBox(`shutdown-${how === "quit" ? "quit" : "kill"}`);
      warmCache(box);
      const pi = start(box, { scenario: "shutdown", env: { MCPW_PI_EXPOSURE: "direct" } });
      const { events } = await pi.prompt("start the server");
      assert.equal(resultText(toolEnds(events)[0]), "Echo: started");
      const servers = pidsIn(box.files.pids);
      const serve = mcpwServe(box.marker);
      assert.ok(servers.length >= 1 && serve.length === 1, `running: server ${servers}, mcpw ${serve.map((p) => p.pid)}`);
      if (how === "quit") await pi.close();
      else {
        pi.kill();
        await pi.exited;
      }
      await until(() => markedProcesses(box.marker).length === 0 && servers.every((p) => !isAlive(p)),
        `no process left after ${how}`, 10_000).catch((err) => {
        throw new Error(`${err.message}: ${JSON.stringify(markedProcesses(box.marker))}`);
      });
      results.push(`${how}: mcpw ${serve[0].pid} and server ${servers.join(",")} gone`);
    }
    return results.join("; ");
  },

  /** A new session closes the old session's mcpw (and its servers); the new session gets its own. */
  async "new-session"() {
    const box = newBox("new-session");
    warmCache(box);
    const pi = start(box, { scenario: "new-session", env: { MCPW_PI_EXPOSURE: "direct" } });
    const first = await pi.prompt("echo");
    assert.equal(resultText(toolEnds(first.events)[0]), "Echo: in this session");
    const [old] = mcpwServe(box.marker);
    const oldServers = pidsIn(box.files.pids);
    const from = pi.events.length;
    pi.send({ id: "new", type: "new_session" });
    const answer = await pi.waitFor((e) => e.type === "response" && e.id === "new", "new_session's response", { from });
    assert.equal(answer.success, true, JSON.stringify(answer));
    await until(() => !isAlive(old.pid) && oldServers.every((p) => !isAlive(p)), "the old session's mcpw and server gone");
    const second = await pi.prompt("echo again");
    assert.equal(resultText(toolEnds(second.events)[0]), "Echo: in this session");
    const now = mcpwServe(box.marker);
    assert.equal(now.length, 1, "one mcpw: the new session's");
    assert.notEqual(now[0].pid, old.pid);
    await pi.close();
    return `old mcpw ${old.pid} and server ${oldServers.join(",")} gone at new_session; new mcpw ${now[0].pid} answered`;
  },

  /** /mcp reconnect SERVER: connects that server, restarts mcpw, and calls go on. */
  async reconnect() {
    const box = newBox("reconnect");
    warmCache(box);
    const pi = start(box, { scenario: "reconnect", env: { MCPW_PI_EXPOSURE: "direct" } });
    assert.equal(resultText(toolEnds((await pi.prompt("echo")).events)[0]), "Echo: before");
    const [old] = mcpwServe(box.marker);
    const said = await pi.command(`${cmd} reconnect s`, { settle: (e) => e.type === "extension_ui_request" && e.method === "notify" && /restarted/.test(e.message ?? "") });
    const notes = said.filter((e) => e.method === "notify").map((e) => e.message);
    assert.match(notes.at(-1), /^mcpw restarted: \d+ tools\.$/, notes.join(" | "));
    const after = await pi.prompt("echo again");
    assert.equal(resultText(toolEnds(after.events)[0]), "Echo: after");
    const now = mcpwServe(box.marker);
    assert.equal(now.length, 1);
    assert.notEqual(now[0].pid, old.pid, "a new mcpw");
    await pi.close();
    return `${notes.join(" / ")}; mcpw ${old.pid} → ${now[0].pid}`;
  },

  /** /mcp auth SERVER logs in to an OAuth server (mcpw's login, a scripted browser), and its tools join. */
  async auth() {
    const box = newBox("auth");
    warmCache(box);
    const port = await freePort();
    const oauth = spawn(cfg.node, [join(dirname(cfg.misbehave), "oauth-server.mjs")], { env: { ...box.env, PORT: String(port) }, stdio: "ignore" });
    try {
      await until(() => canConnect(port), "the OAuth server listening");
      const servers = JSON.parse(readFileSync(box.config, "utf8"));
      servers.mcpServers.o = { url: `http://127.0.0.1:${port}/mcp` };
      writeFileSync(box.config, JSON.stringify(servers));
      // No keyring here: mcpw's own settings choose its file store.
      const own = join(box.home, ".config/mcpw/mcp.json");
      mkdirSync(dirname(own), { recursive: true });
      const mcpwConfig = box.config === own ? servers : {};
      writeFileSync(own, JSON.stringify({ ...mcpwConfig, settings: { credentialStore: "file" } }));
      const browser = resolve(here, "../../../tests/conformance/browser.sh");
      const pi = start(box, { scenario: "auth", env: { MCPW_PI_EXPOSURE: "direct", BROWSER: browser } });
      const said = await pi.command(`${cmd} auth o`, { settle: (e) => e.method === "notify" && /^(Logged in to o\.|mcpw auth login o exited)/.test(e.message ?? "") });
      const notes = said.filter((e) => e.method === "notify").map((e) => e.message);
      assert.ok(notes.includes("Logged in to o."), notes.join(" | "));
      const { events } = await pi.prompt("who am I");
      const [whoami] = toolEnds(events);
      assert.equal(whoami?.isError, false, resultText(whoami));
      assert.match(resultText(whoami), /^client /);
      await pi.close();
      return `logged in through ${cmd} auth; o__whoami: "${resultText(whoami)}"`;
    } finally {
      oauth.kill();
    }
  },

  /** MCP prompts are slash commands: positional and key=value arguments, the text sent as the user's. */
  async prompt() {
    if (!cfg.everything) return "SKIP: no server-everything (set EVERYTHING)";
    const box = newBox("prompt", { everything: true });
    warmCache(box);
    const pi = start(box, { scenario: "prompt" });
    const from = pi.events.length;
    pi.send({ id: "prompt-cmd", type: "prompt", message: "/e__args-prompt Paris state=Texas" });
    const end = await pi.waitFor((e) => e.type === "agent_end", "the run the prompt command starts", { from });
    assert.equal(finalText(end), "model got: What's weather in Paris, Texas?");
    await pi.close();
    return `/e__args-prompt Paris state=Texas → "${finalText(end)}"`;
  },

  /** progress: a server's progress notifications become pi tool updates, in order, before the result. */
  async progress() {
    if (!cfg.everything) return "SKIP: no server-everything (set EVERYTHING)";
    const box = newBox("progress", { everything: true });
    warmCache(box);
    const pi = start(box, { scenario: "progress", args: ["--mcpw-exposure", "direct"] });
    const { events, end } = await pi.prompt("run the long operation");
    const updates = events
      .filter((e) => e.type === "tool_execution_update")
      .map((e) => e.partialResult?.details)
      .filter((d) => d?.progress !== undefined)
      .map((d) => `${d.progress}/${d.total}`);
    assert.deepEqual(updates, ["1/3", "2/3", "3/3"], "every progress notification, in order");
    const [done] = toolEnds(events);
    assert.equal(done?.isError, false, resultText(done));
    assert.match(finalText(end), /Long running operation completed/);
    await pi.close();
    return `tool updates ${updates.join(", ")}, then "${resultText(done)}"`;
  },

  /** media: images pass as pi images; text resources, binary resources (saved to a file) and links as text. */
  async media() {
    if (!cfg.everything) return "SKIP: no server-everything (set EVERYTHING)";
    const box = newBox("media", { everything: true });
    warmCache(box);
    const pi = start(box, { scenario: "media", args: ["--mcpw-exposure", "direct"] });
    const { events } = await pi.prompt("show me media");
    const [image, text, blob, links] = toolEnds(events);
    for (const e of [image, text, blob, links]) assert.equal(e?.isError, false, resultText(e));
    const picture = image.result.content.find((c) => c.type === "image");
    assert.ok(picture && picture.mimeType === "image/png" && picture.data.length > 100, JSON.stringify(image.result.content).slice(0, 300));
    assert.match(resultText(text), /\[Resource: demo:\/\/resource\/dynamic\/text\/2\]\nResource 2: This is a plaintext resource/);
    const saved = blob.result.content.map((c) => /saved to (\S+)$/m.exec(c.text ?? "")).find(Boolean);
    assert.ok(saved, resultText(blob));
    assert.ok(readFileSync(saved[1]).length > 0, "the binary resource's bytes are in the file");
    assert.match(resultText(links), /URI: demo:\/\/resource\//);
    await pi.close();
    return `image ${picture.mimeType} (${picture.data.length} base64 chars); text resource with its header; blob saved to ${saved[1]}; links as text`;
  },

  /** view: an MCP App's tool called through `mcp`; pi is offered the view mcpw opened for it. */
  async view() {
    if (!cfg.clock) return "SKIP: no MCP App server (set APP_SERVER)";
    const box = newBox("view", { clock: true });
    warmCache(box);
    const pi = start(box, { scenario: "view" });
    const { events } = await pi.prompt("what time is it");
    const [call] = toolEnds(events);
    assert.equal(call?.isError, false, resultText(call));
    const url = call.result.details?.view;
    assert.match(url ?? "", /^http:\/\/127\.0\.0\.1:\d+\/view#view=[0-9a-f]{32}&token=[0-9a-f]{32}$/, JSON.stringify(call.result.details));
    const note = pi.events.find((e) => e.method === "notify" && (e.message ?? "").includes(url));
    assert.equal(note?.message, `mcp has a view: open ${url}`);
    assert.ok(!resultText(call).includes(url), "the address is the user's, not the model's");
    // The view is there while pi runs: its data answers the address' token.
    const at = new URL(url);
    const view = new URLSearchParams(at.hash.slice(1));
    const data = await fetch(`${at.origin}/api/views/${view.get("view")}`, { headers: { Authorization: `Bearer ${view.get("token")}` } });
    assert.equal(data.status, 200);
    assert.equal((await data.json()).tool, "get-time");
    await pi.close();
    return `view offered: ${url.replace(/token=.*/, "token=…")}`;
  },

  /** No mcpw: the `mcp` tool reports why, and so does a notification at start. */
  async missing() {
    const box = newBox("missing");
    const pi = start(box, { scenario: "proxy", env: { MCPW_BIN: join(box.root, "no-mcpw-here") } });
    const { events } = await pi.prompt("search");
    const [first] = toolEnds(events);
    assert.equal(first?.toolName, "mcp");
    assert.equal(first.isError, true);
    assert.match(resultText(first), /^mcpw not found: MCPW_BIN=\S+no-mcpw-here is not an executable file\. Install mcpw/);
    const note = pi.events.find((e) => e.type === "extension_ui_request" && e.method === "notify");
    assert.equal(note?.notifyType, "error");
    assert.equal(note.message, resultText(first));
    await pi.close();
    return `tool error and notification: "${resultText(first)}"`;
  },

  /** skills: a server's MCP skills are pi skills: listed in pi's system prompt, read from a folder of the server's. */
  async skills() {
    if (!cfg.skills) return "SKIP: no skills server (set PYTHON, SKILLS_SERVER and SKILLS_ROOT)";
    const box = newBox("skills", { skills: true });
    warmCache(box);
    const pi = start(box, { scenario: "skills" });
    const { events, end } = await pi.prompt("deploy the service");
    const [read] = toolEnds(events);
    assert.equal(read?.toolName, "read", finalText(end));
    assert.equal(read.isError, false, resultText(read));
    const path = events.find((e) => e.type === "tool_execution_start" && e.toolName === "read")?.args?.path ?? "";
    // A folder of the server's own, outside pi's skill folders: <export>/k/deploy/SKILL.md.
    assert.match(path, /\/mcpw-pi-skills-[^/]+\/k\/deploy\/SKILL\.md$/, path);
    assert.ok(!path.startsWith(box.agent) && !path.startsWith(box.project), path);
    // The server's file, checked through mcpw, without `allowed-tools`.
    const theirs = readFileSync(join(cfg.skills.root, "deploy/SKILL.md"), "utf8");
    assert.match(theirs, /^allowed-tools: /m);
    assert.equal(readFileSync(path, "utf8"), theirs.replace(/^allowed-tools: .*\n/m, ""));
    assert.match(resultText(read), /# Deploy to staging/);
    assert.doesNotMatch(resultText(read), /allowed-tools/);
    await pi.close();
    assert.ok(!existsSync(path), "the export goes with the session");
    return `pi listed k's deploy skill at ${path.replace(box.root, "<box>")}; the model read it`;
  },

  /** A failed export of the skills (here an mcpw without `skills export`) is said once; pi goes on. */
  async "skills-failed"() {
    const box = newBox("skills-failed");
    warmCache(box);
    const older = join(box.root, "mcpw-without-skills");
    writeFileSync(older, `#!/bin/sh
case " $* " in *" skills export "*) echo "error: unrecognized subcommand 'skills'" >&2; exit 2;; esac
exec "${cfg.mcpw}" "$@"
`, { mode: 0o755 });
    const pi = start(box, { scenario: "cold", env: { MCPW_BIN: older, MCPW_PI_EXPOSURE: "direct" } });
    const { events } = await pi.prompt("echo at once");
    const [echo] = toolEnds(events);
    assert.equal(resultText(echo), "Echo: cold start", "pi went on");
    const said = pi.events.filter((e) => e.method === "notify" && /skills/.test(e.message ?? ""));
    assert.equal(said.length, 1, JSON.stringify(said));
    assert.equal(said[0].notifyType, "warning");
    assert.match(said[0].message, /^mcpw: the servers' skills were not all loaded: error: unrecognized subcommand 'skills'$/);
    await pi.close();
    return `said once: "${said[0].message}"; then "${resultText(echo)}"`;
  },

  /** content: audio becomes a note, big text is cut by mcpw with the whole kept in a file, tool errors are flagged. */
  /** code: the one `code` tool runs a script whose calls reach the server; only its value returns. */
  async code() {
    const box = newBox("code");
    warmCache(box);
    const pi = start(box, { scenario: "code", env: { MCPW_PI_EXPOSURE: "code" } });
    // The code tool is registered once mcpw has compiled its script guest
    // (seconds in a fresh home): ask until it is, within a minute.
    const deadline = Date.now() + 60_000;
    let listed;
    for (;;) {
      listed = await pi.command(`${cmd} tools`, { settle: (e) => e.type === "extension_ui_request" && e.method === "notify" });
      const message = listed.find((e) => e.method === "notify").message;
      if (message !== "No mcpw tools registered." || Date.now() > deadline) break;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    assert.match(listed.find((e) => e.method === "notify").message, /^1 mcpw tools:\ncode: /);
    const { events } = await pi.prompt("run a script");
    const [run] = toolEnds(events);
    assert.equal(run?.toolName, "code");
    assert.equal(run.isError, false, resultText(run));
    assert.equal(resultText(run), '["Echo: a","Echo: b"]\n\nLog:\ntwo calls');
    assert.equal(run.result?.details?.structuredContent?.calls?.length, 2, JSON.stringify(run.result?.details));
    await pi.close();
    return `code tool: "${resultText(run).split("\n")[0]}" from ${run.result.details.structuredContent.calls.length} calls`;
  },

  async content() {
    const box = newBox("content");
    warmCache(box);
    const pi = start(box, { scenario: "content", env: { MCPW_PI_EXPOSURE: "direct" } });
    const audio = toolEnds((await pi.prompt("audio")).events)[0];
    assert.match(resultText(audio), /^\[Audio: audio\/wav, 12B; not shown\]$/);
    const big = toolEnds((await pi.prompt("big")).events)[0];
    const text = resultText(big);
    assert.equal(big.isError, false);
    // mcpw cut it to its result budget (10,000 tokens): the text's head and tail, then where the rest is.
    assert.match(text, /^x+\n\[… [\d,]+ characters cut …\]\nx+\[Cut to fit the result budget of 10,000 tokens/, text.slice(0, 100));
    const saved = text.match(/Its text is in the file (\S+\.txt) too\.\]/);
    assert.ok(saved, `cut text: ${text.slice(-600)}`);
    assert.equal(readFileSync(saved[1], "utf8"), "x".repeat(120_000), "the whole text is in the file");
    assert.match(text, /\[Resource link: \w+\]\nURI: mcpw:\/\/results\/\w+/);
    assert.ok(Buffer.byteLength(text) < 41_000, `cut to mcpw's budget (${Buffer.byteLength(text)} bytes)`);
    // The server exits mid-call: mcpw answers with a result flagged isError, which must reach the
    // model as an error (0.73 ignores isError returned by a tool; the extension sets it).
    const crashed = await pi.prompt("crash the server");
    const bad = toolEnds(crashed.events)[0];
    assert.equal(bad.isError, true, `tool error flagged: ${resultText(bad)}`);
    assert.equal(bad.result?.details?.error, "tool_error");
    assert.match(finalText(crashed.end), /^model saw \(isError=true\): Error: server "s"/);
    await pi.close();
    return `audio "${resultText(audio)}"; big text cut to ${Buffer.byteLength(text)} bytes; error flagged: "${resultText(bad)}"`;
  },
};

const chosen = process.argv.slice(2);
const names = chosen.length ? chosen : Object.keys(scenarios);
console.log(`pi ${cfg.version} (${cfg.line}), node ${cfg.node}, mcpw ${cfg.mcpw}`);
let failed = 0;
let skipped = 0;
const t0 = Date.now();
for (const name of names) {
  const scenario = scenarios[name];
  if (!scenario) {
    console.log(`FAIL ${name}: no such scenario`);
    failed++;
    continue;
  }
  const started = Date.now();
  try {
    const detail = await scenario();
    // A scenario that could not run is counted apart, never as passed.
    if (typeof detail === "string" && detail.startsWith("SKIP:")) {
      skipped++;
      console.log(`SKIP ${name}: ${detail.slice("SKIP:".length).trim()}`);
    } else {
      console.log(`PASS ${name} (${Date.now() - started} ms): ${detail}`);
    }
  } catch (err) {
    failed++;
    console.log(`FAIL ${name} (${Date.now() - started} ms): ${err?.stack ?? err}`);
  } finally {
    for (const pi of running) pi.kill();
  }
}
for (const note of notes) console.log(`note: ${note}`);
if (failed) console.log(`sandboxes kept for inspection: ${boxes.join(" ")}`);
else for (const root of boxes) rmSync(root, { recursive: true, force: true });
console.log(
  `${names.length - failed - skipped}/${names.length} passed, ${skipped} skipped in ${((Date.now() - t0) / 1000).toFixed(1)} s`,
);
process.exit(failed ? 1 : 0);
