// mcpw for pi: every MCP server the user configured (for mcpw, and in pi's own mcp.json) as pi
// tools, through one `mcpw serve` per pi session.
import type { ExtensionAPI, ExtensionContext } from "@mariozechner/pi-coding-agent";
import { PromptCommands, registerMcpCommand, show } from "./src/commands.ts";
import { Gateway, errorText } from "./src/connection.ts";
import { findMcpw, runMcpw } from "./src/mcpw.ts";
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

export default async function mcpwExtension(pi: ExtensionAPI) {
  pi.registerFlag(EXPOSURE_FLAG, { description: "How mcpw shows MCP tools: proxy (one `mcp` tool), tool-search, or direct", type: "string" });

  let { exposure, problem } = resolveExposure(exposureFromArgv());
  let bin: string | undefined;
  let binError = "";
  try {
    bin = findMcpw();
  } catch (err) {
    binError = errorText(err);
  }

  let gateway: Gateway | undefined;
  let ui: ExtensionContext | undefined;
  let servers: string[] = [];
  /** The live listing the first prompt must wait for (cold cache, or no cached listing at all). */
  let startupListing: Promise<void> | undefined;
  /** Settles once the session's first prompt listing is done (prompt commands are registered). */
  let promptListing: Promise<void> | undefined;

  const setStatus = () => {
    const n = tools.activeNames().length;
    try {
      ui?.ui.setStatus("mcpw", bin ? `mcpw: ${n} ${n === 1 ? "tool" : "tools"}` : "mcpw: not found");
    } catch {
      // No UI, or a session that has ended.
    }
  };
  const warn = (message: string) => show(ui, message, "warning");

  const call: Caller = async (name, args, options) => {
    if (!bin) throw new Error(binError);
    if (!gateway) throw new Error("mcpw: no pi session is running");
    try {
      return await gateway.callTool(name, args, options);
    } catch (err) {
      if (options.signal?.aborted) throw err;
      const exit = gateway.describeExit();
      throw new Error(`mcpw: calling ${name} failed: ${errorText(err)}${exit ? ` (${exit})` : ""}`);
    }
  };
  const tools = new ToolSet(pi, () => call);
  const prompts = new PromptCommands(pi, (name, args) => {
    if (!gateway) throw new Error("mcpw: no pi session is running");
    return gateway.getPrompt(name, args);
  });

  // Register tools before the first prompt from mcpw's cache, so that pi knows them without any
  // server being started. pi awaits an async factory.
  let listLive = true;
  if (bin) {
    const cached = await cachedTools(bin, exposure, process.cwd());
    if (cached) {
      tools.sync(cached.tools, { registerOnly: true });
      // In proxy exposure the one `mcp` tool does not depend on what is cached.
      listLive = cached.uncached.length > 0 && exposure !== "proxy";
    }
  } else if (exposure === "proxy") {
    tools.registerUnavailable(() => binError);
  }

  registerMcpCommand(pi, {
    bin: () => {
      if (!bin) throw new Error(binError);
      return bin;
    },
    exposure: () => exposure,
    cwd: () => gateway?.options.cwd ?? process.cwd(),
    logFile: logFile(),
    pid: () => gateway?.pid ?? null,
    tools: () => {
      const all = new Map(pi.getAllTools().map((t) => [t.name, t.description ?? ""]));
      return tools.activeNames().map((name) => ({ name, description: all.get(name) ?? "" }));
    },
    reconnect: async () => {
      if (!gateway) throw new Error("mcpw: no pi session is running");
      await gateway.reset();
      const list = await gateway.refresh();
      return list.length;
    },
    servers: () => servers,
    rememberServers: (names) => {
      servers = names;
    },
  });

  pi.on("session_start", async (_event, ctx) => {
    ui = ctx;
    // pi can announce one session twice (seen after new_session): keep the gateway of the first.
    if (gateway) {
      setStatus();
      return;
    }
    const flagged = resolveExposure(pi.getFlag(EXPOSURE_FLAG));
    if (flagged.exposure !== exposure) {
      exposure = flagged.exposure;
      listLive = true;
    }
    problem = flagged.problem ?? problem;
    if (problem) show(ctx, `mcpw: ${problem}`, "warning");
    if (!bin) {
      show(ctx, binError, "error");
      setStatus();
      return;
    }
    // Spawned here, not in the factory: pi may run the factory without a session.
    gateway = new Gateway(
      {
        bin,
        exposure,
        cwd: ctx.cwd,
        logFile: logFile(),
        callTimeoutMs: callTimeoutMs(),
        onTools: (list) => {
          tools.sync(list);
          setStatus();
        },
        onPrompts: (list) => prompts.sync(list),
      },
      warn,
    );
    const current = gateway;
    const startup = listLive
      ? current.refresh().then(() => undefined)
      : current.connect().then(async (connection) => prompts.sync(await connection.listPrompts()));
    const reported = startup.catch((err) => show(ctx, errorText(err), "error"));
    if (listLive) startupListing = reported;
    promptListing = reported;
    setStatus();
    if (ctx.hasUI) {
      void runMcpw(bin, ["status", "--json"], { cwd: ctx.cwd, timeoutMs: 15_000 })
        .then((r) => {
          servers = (JSON.parse(r.stdout).servers ?? []).map((s: { name: string }) => s.name);
        })
        .catch(() => {});
    }
  });

  // The first prompt waits for a cold-cache listing, so that the model sees every tool in it.
  pi.on("before_agent_start", async () => {
    const pending = startupListing;
    startupListing = undefined;
    if (pending) await pending;
  });

  // pi looks up commands before this event: a command it did not know may be an MCP prompt whose
  // command the startup listing (run in the background) has not registered yet.
  pi.on("input", async (event: { text: string }, ctx) => {
    const command = /^\/(\S+)(?:\s+([\s\S]*))?$/.exec(event.text.trim());
    if (!command || !promptListing) return { action: "continue" as const };
    await promptListing;
    if (!prompts.has(command[1])) return { action: "continue" as const };
    await prompts.run(command[1], command[2] ?? "", ctx);
    return { action: "handled" as const };
  });

  pi.on("session_shutdown", async () => {
    const ending = gateway;
    gateway = undefined;
    startupListing = undefined;
    promptListing = undefined;
    try {
      ui?.ui.setStatus("mcpw", undefined);
    } catch {
      // The UI may be gone already.
    }
    ui = undefined;
    await ending?.dispose();
  });

  // A tool error must reach the model flagged as one. Returning isError from execute is not
  // honoured by every pi line; this event is.
  pi.on("tool_result", (event: any) => {
    if (tools.has(event.toolName) && event.details?.error) return { isError: true };
    return undefined;
  });
}
