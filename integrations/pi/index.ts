// mcpw for pi: every MCP server the user configured for mcpw (and, on a pi with no MCP of its own,
// in pi's mcp.json) as pi tools, through one `mcpw serve` per pi session.
import type { ExtensionAPI, ExtensionContext } from "@mariozechner/pi-coding-agent";
import { PromptCommands, registerMcpCommand, show } from "./src/commands.ts";
import { Gateway, errorText } from "./src/connection.ts";
import { askUser } from "./src/elicit.ts";
import { findMcpw, leavePiConfigToPi, piHasOwnMcp, runMcpw } from "./src/mcpw.ts";
import { exportSkills, removeExport } from "./src/skills.ts";
import { callTimeoutMs, EXPOSURE_FLAG, exposureFromArgv, logFile, resolveExposure, type Exposure } from "./src/settings.ts";
import { ToolSet, type Caller } from "./src/tools.ts";
import type { Tool } from "@modelcontextprotocol/sdk/types.js";

/**
 * The tools `mcpw serve` would list at start, from mcpw's cache, starting no server. `uncached`
 * names servers with nothing cached. Undefined when this mcpw cannot answer.
 */
async function cachedTools(bin: string, exposure: Exposure, cwd: string): Promise<{ tools: Tool[]; uncached: string[] } | undefined> {
  try {
    const result = await runMcpw(bin, ["tools", "--exposure", exposure, "--json"], { cwd, timeoutMs: 15_000 });
    if (result.code !== 0) return undefined;
    const json = JSON.parse(result.stdout);
    if (!json || !Array.isArray(json.tools)) return undefined;
    return { tools: json.tools, uncached: Array.isArray(json.uncached) ? json.uncached : [] };
  } catch {
    return undefined;
  }
}

/** A project server that waits for the user's approval (`mcpw status --json`). */
interface Waiting {
  name: string;
  file: string;
  runs: string;
  /** The rest of what the approval covers (env, cwd, headers, auth, approve), secrets masked. */
  covers?: string[];
  changed: boolean;
}

/**
 * Asks, through pi's own dialogue, whether to approve the project's servers that wait; approved,
 * `mcpw trust` records it and the running mcpw starts them (it follows its config).
 */
async function askTrust(bin: string, ctx: ExtensionContext, waiting: Waiting[]): Promise<void> {
  if (waiting.length === 0) return;
  const lines = waiting.map((w) => {
    const covers = (w.covers ?? []).map((line) => `\n  ${line}`).join("");
    return `${w.name}${w.changed ? " (changed since approved)" : ""}: ${w.runs}${covers}\n  from ${w.file}`;
  });
  const approve = await ctx.ui.confirm(
    "Run this project's MCP servers?",
    `This project defines MCP servers that run commands as you:\n\n${lines.join("\n")}\n\nApprove them for this repository?`,
  );
  if (!approve) {
    show(ctx, `mcpw: the project's servers stay stopped (${waiting.map((w) => w.name).join(", ")}); approve them later with \`mcpw trust\`.`);
    return;
  }
  const r = await runMcpw(bin, ["trust", ...waiting.map((w) => w.name)], { cwd: ctx.cwd, timeoutMs: 15_000 });
  show(ctx, r.code === 0 ? `mcpw: ${r.stdout.trim()}` : `mcpw trust failed: ${(r.stderr || r.stdout).trim()}`, r.code === 0 ? "info" : "error");
}

/** What the extension knows of pi's session, and of the mcpw serving it. */
interface SessionState {
  exposure: Exposure;
  /** What was wrong with the exposure asked for, to say once a session starts. */
  problem?: string;
  /** The mcpw binary, or why there is none. */
  bin?: string;
  binError: string;
  gateway?: Gateway;
  ui?: ExtensionContext;
  /** The configured servers' names, for `/mcp` (`/mcpw`) completions. */
  servers: string[];
  /** Whether the session must list tools live (no usable cached listing). */
  listLive: boolean;
  /** The live listing the first prompt must wait for (cold cache, or no cached listing at all). */
  startupListing?: Promise<void>;
  /** Settles once the session's first prompt listing is done (prompt commands are registered). */
  promptListing?: Promise<void>;
  /** The folder the servers' skills were exported into, for pi to load. */
  skillsExport?: string;
}

export default async function mcpwExtension(pi: ExtensionAPI) {
  // A pi with MCP of its own keeps it: its `/mcp` and the servers of its `mcp.json` stay pi's, and
  // mcpw serves its own config beside them under `/mcpw`. Registering `/mcp` would replace pi's.
  const ownMcp = piHasOwnMcp(pi);
  if (ownMcp) leavePiConfigToPi();
  pi.registerFlag(EXPOSURE_FLAG, { description: "How mcpw shows MCP tools: proxy (one `mcp` tool), tool-search, or direct", type: "string" });

  const state: SessionState = { ...resolveExposure(exposureFromArgv()), binError: "", servers: [], listLive: true };
  try {
    state.bin = findMcpw();
  } catch (err) {
    state.binError = errorText(err);
  }

  const setStatus = () => {
    const n = tools.activeNames().length;
    try {
      state.ui?.ui.setStatus("mcpw", state.bin ? `mcpw: ${n} ${n === 1 ? "tool" : "tools"}` : "mcpw: not found");
    } catch {
      // No UI, or a session that has ended.
    }
  };
  const warn = (message: string) => show(state.ui, message, "warning");

  const call: Caller = async (name, args, options) => {
    if (!state.bin) throw new Error(state.binError);
    if (!state.gateway) throw new Error("mcpw: no pi session is running");
    try {
      return await state.gateway.callTool(name, args, options);
    } catch (err) {
      if (options.signal?.aborted) throw err;
      const exit = state.gateway.describeExit();
      throw new Error(`mcpw: calling ${name} failed: ${errorText(err)}${exit ? ` (${exit})` : ""}`);
    }
  };
  const tools = new ToolSet(pi, () => call);
  const prompts = new PromptCommands(pi, (name, args) => {
    if (!state.gateway) throw new Error("mcpw: no pi session is running");
    return state.gateway.getPrompt(name, args);
  });

  // Register tools before the first prompt from mcpw's cache, so that pi knows them without any
  // server being started. pi awaits an async factory.
  if (state.bin) {
    const cached = await cachedTools(state.bin, state.exposure, process.cwd());
    if (cached) {
      tools.sync(cached.tools, { registerOnly: true });
      // In proxy exposure the one `mcp` tool does not depend on what is cached.
      state.listLive = cached.uncached.length > 0 && state.exposure !== "proxy";
    }
  } else if (state.exposure === "proxy") {
    tools.registerUnavailable(() => state.binError);
  }

  registerMcpCommand(pi, {
    name: ownMcp ? "mcpw" : "mcp",
    bin: () => {
      if (!state.bin) throw new Error(state.binError);
      return state.bin;
    },
    exposure: () => state.exposure,
    cwd: () => state.gateway?.options.cwd ?? process.cwd(),
    logFile: logFile(),
    pid: () => state.gateway?.pid ?? null,
    tools: () => {
      const all = new Map(pi.getAllTools().map((t) => [t.name, t.description ?? ""]));
      return tools.activeNames().map((name) => ({ name, description: all.get(name) ?? "" }));
    },
    reconnect: async () => {
      if (!state.gateway) throw new Error("mcpw: no pi session is running");
      await state.gateway.reset();
      const list = await state.gateway.refresh();
      return list.length;
    },
    servers: () => state.servers,
    rememberServers: (names) => {
      state.servers = names;
    },
  });

  pi.on("session_start", async (_event, ctx) => {
    state.ui = ctx;
    // pi can announce one session twice (seen after new_session): keep the gateway of the first.
    if (state.gateway) {
      setStatus();
      return;
    }
    const flagged = resolveExposure(pi.getFlag(EXPOSURE_FLAG));
    if (flagged.exposure !== state.exposure) {
      state.exposure = flagged.exposure;
      state.listLive = true;
    }
    state.problem = flagged.problem ?? state.problem;
    if (state.problem) show(ctx, `mcpw: ${state.problem}`, "warning");
    if (!state.bin) {
      show(ctx, state.binError, "error");
      setStatus();
      return;
    }
    // Spawned here, not in the factory: pi may run the factory without a session.
    state.gateway = new Gateway(
      {
        bin: state.bin,
        exposure: state.exposure,
        cwd: ctx.cwd,
        logFile: logFile(),
        callTimeoutMs: callTimeoutMs(),
        onTools: (list) => {
          tools.sync(list);
          setStatus();
        },
        onPrompts: (list) => prompts.sync(list),
        // Approvals (and servers' questions) go to pi's dialogues, where there is a UI to show them.
        elicit: ctx.hasUI ? (params) => askUser(state.ui ?? ctx, params) : undefined,
      },
      warn,
    );
    const current = state.gateway;
    const startup = state.listLive
      ? current.refresh().then(() => undefined)
      : current.connect().then(async (connection) => prompts.sync(await connection.listPrompts()));
    const reported = startup.catch((err) => show(ctx, errorText(err), "error"));
    if (state.listLive) state.startupListing = reported;
    state.promptListing = reported;
    setStatus();
    if (ctx.hasUI) {
      const bin = state.bin;
      void runMcpw(bin, ["status", "--json"], { cwd: ctx.cwd, timeoutMs: 15_000 })
        .then(async (r) => {
          const status = JSON.parse(r.stdout);
          state.servers = (status.servers ?? []).map((s: { name: string }) => s.name);
          await askTrust(bin, ctx, status.waitingForApproval ?? []);
        })
        .catch(() => {});
    }
  });

  // The servers' skills, exported into folders of their own (one per server) that pi loads with
  // its own. A failed export is said once; pi starts without those skills.
  pi.on("resources_discover", async (event, ctx) => {
    if (!state.bin) return undefined;
    const exported = await exportSkills(state.bin, event.cwd);
    removeExport(state.skillsExport);
    state.skillsExport = exported.root;
    if (exported.problem) show(ctx, `mcpw: the servers' skills were not all loaded: ${exported.problem}`, "warning");
    return { skillPaths: exported.paths };
  });

  // The first prompt waits for a cold-cache listing, so that the model sees every tool in it.
  pi.on("before_agent_start", async () => {
    const pending = state.startupListing;
    state.startupListing = undefined;
    if (pending) await pending;
  });

  // pi looks up commands before this event: a command it did not know may be an MCP prompt whose
  // command the startup listing (run in the background) has not registered yet.
  pi.on("input", async (event: { text: string }, ctx) => {
    const command = /^\/(\S+)(?:\s+([\s\S]*))?$/.exec(event.text.trim());
    if (!command || !state.promptListing) return { action: "continue" as const };
    await state.promptListing;
    if (!prompts.has(command[1])) return { action: "continue" as const };
    await prompts.run(command[1], command[2] ?? "", ctx);
    return { action: "handled" as const };
  });

  pi.on("session_shutdown", async () => {
    const ending = state.gateway;
    state.gateway = undefined;
    state.startupListing = undefined;
    state.promptListing = undefined;
    try {
      state.ui?.ui.setStatus("mcpw", undefined);
    } catch {
      // The UI may be gone already.
    }
    state.ui = undefined;
    removeExport(state.skillsExport);
    state.skillsExport = undefined;
    await ending?.dispose();
  });

  // A tool error must reach the model flagged as one. Returning isError from execute is not
  // honoured by every pi line; this event is.
  pi.on("tool_result", (event) => {
    const details: unknown = event.details;
    const failed = typeof details === "object" && details !== null && "error" in details && Boolean(details.error);
    if (tools.has(event.toolName) && failed) return { isError: true };
    return undefined;
  });
}
