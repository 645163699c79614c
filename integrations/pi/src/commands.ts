// Slash commands: /mcp, or /mcpw beside pi's own MCP (status, tools, reconnect, auth), and one
// command per MCP prompt.
import type { ExtensionAPI, ExtensionCommandContext } from "@mariozechner/pi-coding-agent";
import type { GetPromptResult, Prompt } from "@modelcontextprotocol/sdk/types.js";
import { runMcpw } from "./mcpw.ts";

type Level = "info" | "warning" | "error";

/** What a message is shown through: pi's context, where it has one. */
export type Shown = { hasUI: boolean; ui: { notify(message: string, type?: Level): void } } | undefined;

/** Shows a message: a notification in a UI, stderr otherwise (stdout may be pi's JSON stream). */
export function show(ctx: Shown, message: string, level: Level = "info"): void {
  if (ctx?.hasUI) ctx.ui.notify(message, level);
  else console.error(message);
}

export interface McpCommandDeps {
  /** The command's name: `mcp`, or `mcpw` where pi has an `/mcp` of its own. */
  name: string;
  bin: () => string;
  exposure: () => string;
  cwd: () => string;
  logFile: string;
  pid: () => number | null;
  tools: () => { name: string; description: string }[];
  /** Closes and respawns the connection and re-lists; returns the number of tools. */
  reconnect: () => Promise<number>;
  /** Server names for completions, from the last status seen. */
  servers: () => string[];
  rememberServers: (names: string[]) => void;
}

const SUBCOMMANDS = [
  { value: "status", description: "Every server mcpw knows and its state" },
  { value: "tools", description: "The tools registered in pi now" },
  { value: "reconnect", description: "Restart mcpw (or reconnect one server: reconnect SERVER)" },
  { value: "auth", description: "Log in to a server that asks for OAuth: auth SERVER" },
];

interface ServerStatus {
  name: string;
  state?: string;
  toolCount?: number;
  lifecycle?: string;
  error?: string;
  [key: string]: unknown;
}

function formatStatus(json: { servers?: ServerStatus[] }): string {
  const servers = json.servers ?? [];
  if (servers.length === 0) return "No MCP servers configured (mcpw's config, pi's mcp.json, the project's .mcp.json).";
  return servers
    .map((s) => {
      const parts = [s.state ?? "unknown"];
      if (typeof s.toolCount === "number") parts.push(`${s.toolCount} tools`);
      if (s.lifecycle) parts.push(s.lifecycle);
      const problem = typeof s.error === "string" ? ` — ${s.error}` : "";
      return `${s.name}: ${parts.join(", ")}${problem}`;
    })
    .join("\n");
}

export function registerMcpCommand(pi: ExtensionAPI, deps: McpCommandDeps): void {
  const run = async (args: string[], ctx: ExtensionCommandContext, onLine?: (line: string) => void) => {
    const result = await runMcpw(deps.bin(), args, { cwd: deps.cwd() || ctx.cwd, timeoutMs: 6 * 60_000, onLine });
    return result;
  };

  const status = async (ctx: ExtensionCommandContext) => {
    const result = await run(["status", "--json"], ctx);
    let body: string;
    try {
      const json = JSON.parse(result.stdout);
      deps.rememberServers((json.servers ?? []).map((s: ServerStatus) => s.name));
      body = formatStatus(json);
    } catch {
      body = (result.stdout || result.stderr).trim() || `mcpw status exited with ${result.code}`;
    }
    const pid = deps.pid();
    const header = `mcpw (${deps.exposure()}): ${pid ? `serve running, pid ${pid}` : "serve not running"}; ${deps.tools().length} tools in pi; log ${deps.logFile}`;
    show(ctx, `${header}\n${body}`, result.code === 0 ? "info" : "warning");
  };

  pi.registerCommand(deps.name, {
    description: "MCP servers through mcpw: status | tools | reconnect [server] | auth <server>",
    getArgumentCompletions: (prefix: string) => {
      const words = prefix.split(/\s+/);
      if (words.length <= 1) {
        const hits = SUBCOMMANDS.filter((s) => s.value.startsWith(words[0] ?? ""));
        return hits.length ? hits.map((s) => ({ value: s.value, label: s.value, description: s.description })) : null;
      }
      if (words[0] === "reconnect" || words[0] === "auth") {
        const hits = deps.servers().filter((name) => name.startsWith(words[1] ?? ""));
        return hits.length ? hits.map((name) => ({ value: `${words[0]} ${name}`, label: name })) : null;
      }
      return null;
    },
    handler: async (args: string, ctx: ExtensionCommandContext) => {
      const [sub = "status", server] = args.trim().split(/\s+/).filter(Boolean);
      try {
        switch (sub) {
          case "status":
            await status(ctx);
            return;
          case "tools": {
            const tools = deps.tools();
            show(ctx, tools.length
              ? `${tools.length} mcpw tools:\n${tools.map((t) => `${t.name}: ${t.description.split("\n")[0].slice(0, 100)}`).join("\n")}`
              : "No mcpw tools registered.");
            return;
          }
          case "reconnect": {
            if (server) {
              const result = await run(["connect", server], ctx);
              const out = (result.stdout + result.stderr).trim();
              if (result.code !== 0) {
                show(ctx, `mcpw connect ${server} failed:\n${out}`, "error");
                return;
              }
              show(ctx, out || `Connected ${server}.`);
            }
            const count = await deps.reconnect();
            show(ctx, `mcpw restarted: ${count} tools.`);
            return;
          }
          case "auth": {
            if (!server) {
              show(ctx, `Usage: /${deps.name} auth <server>`, "warning");
              return;
            }
            // Lines are shown as they come: the URL to open appears long before the login ends.
            const result = await run(["auth", "login", server], ctx, (line) => { if (line.trim()) show(ctx, line); });
            show(ctx, result.code === 0 ? `Logged in to ${server}.` : `mcpw auth login ${server} exited with ${result.code}.`,
              result.code === 0 ? "info" : "error");
            if (result.code === 0) await deps.reconnect();
            return;
          }
          default:
            show(ctx, `Unknown subcommand "${sub}". Usage: /${deps.name} status | tools | reconnect [server] | auth <server>`, "warning");
        }
      } catch (err) {
        show(ctx, err instanceof Error ? err.message : String(err), "error");
      }
    },
  });
}

/**
 * Splits a command line into words, honouring "double" and 'single' quotes, then maps
 * `key=value` words to arguments by name and the other words, in order, to the prompt's declared
 * arguments not given by name.
 */
export function parsePromptArgs(line: string, prompt: Prompt): Record<string, string> {
  const words: string[] = [];
  const re = /"((?:[^"\\]|\\.)*)"|'([^']*)'|(\S+)/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(line))) words.push(m[1] !== undefined ? m[1].replace(/\\(.)/g, "$1") : (m[2] ?? m[3]));
  const declared = (prompt.arguments ?? []).map((a) => a.name);
  const out: Record<string, string> = {};
  const positional: string[] = [];
  for (const word of words) {
    const eq = word.indexOf("=");
    const key = eq > 0 ? word.slice(0, eq) : "";
    if (key && (declared.includes(key) || declared.length === 0)) out[key] = stripQuotes(word.slice(eq + 1));
    else positional.push(word);
  }
  const free = declared.filter((name) => !(name in out));
  positional.forEach((word, i) => {
    if (i < free.length) out[free[i]] = word;
    else if (free.length) out[free[free.length - 1]] += ` ${word}`; // extra words go to the last argument
  });
  return out;
}

function stripQuotes(value: string): string {
  return /^(["']).*\1$/.test(value) ? value.slice(1, -1) : value;
}

function promptText(result: GetPromptResult): string {
  return result.messages
    .map((message) => {
      const c = message.content as { type: string; text?: string; resource?: { uri: string; text?: string }; uri?: string; name?: string };
      if (c.type === "text") return c.text ?? "";
      if (c.type === "resource" && c.resource) return c.resource.text !== undefined ? `[Resource: ${c.resource.uri}]\n${c.resource.text}` : `[Resource: ${c.resource.uri}]`;
      if (c.type === "resource_link") return `[Resource link: ${c.name}] ${c.uri}`;
      return `[${c.type} content omitted]`;
    })
    .filter(Boolean)
    .join("\n\n");
}

/**
 * One slash command per MCP prompt. pi cannot unregister a command: a prompt that disappears
 * keeps its command, which then says the prompt is gone.
 */
/** Command names a prompt never takes: this package's and pi's own. */
const RESERVED = new Set(["mcp", "mcpw"]);

export class PromptCommands {
  private readonly prompts = new Map<string, Prompt>();
  private readonly registered = new Set<string>();

  constructor(
    private readonly pi: ExtensionAPI,
    private readonly get: (name: string, args: Record<string, string>) => Promise<GetPromptResult>,
  ) {}

  has(name: string): boolean {
    return this.prompts.has(name);
  }

  /** Gets the prompt with the arguments of a command line and sends its text as the user's message. */
  async run(name: string, args: string, ctx: Pick<ExtensionCommandContext, "hasUI" | "ui" | "isIdle">): Promise<void> {
    const current = this.prompts.get(name);
    if (!current) {
      show(ctx, `The MCP prompt ${name} is no longer offered.`, "warning");
      return;
    }
    const usage = (current.arguments ?? []).map((a) => (a.required ? `<${a.name}>` : `[${a.name}]`)).join(" ");
    const values = parsePromptArgs(args, current);
    const missing = (current.arguments ?? []).filter((a) => a.required && !(a.name in values)).map((a) => a.name);
    if (missing.length) {
      show(ctx, `/${name}: missing ${missing.join(", ")}. Usage: /${name} ${usage}`, "warning");
      return;
    }
    try {
      const text = promptText(await this.get(name, values));
      if (!text.trim()) {
        show(ctx, `The MCP prompt ${name} returned no text.`, "warning");
        return;
      }
      // While the agent runs, a message must say how it joins the run.
      if (ctx.isIdle()) this.pi.sendUserMessage(text);
      else this.pi.sendUserMessage(text, { deliverAs: "followUp" });
    } catch (err) {
      show(ctx, `/${name}: ${err instanceof Error ? err.message : String(err)}`, "error");
    }
  }

  sync(prompts: Prompt[]): void {
    this.prompts.clear();
    for (const prompt of prompts) {
      this.prompts.set(prompt.name, prompt);
      if (this.registered.has(prompt.name) || RESERVED.has(prompt.name)) continue;
      this.registered.add(prompt.name);
      const name = prompt.name;
      const usage = (prompt.arguments ?? []).map((a) => (a.required ? `<${a.name}>` : `[${a.name}]`)).join(" ");
      this.pi.registerCommand(name, {
        description: `${prompt.description ?? `MCP prompt ${name}`}${usage ? ` (${usage})` : ""}`,
        getArgumentCompletions: (prefix: string) => {
          const current = this.prompts.get(name);
          const last = prefix.split(/\s+/).pop() ?? "";
          const hits = (current?.arguments ?? []).filter((a) => `${a.name}=`.startsWith(last) && !prefix.includes(`${a.name}=`));
          if (!hits.length) return null;
          const head = prefix.slice(0, prefix.length - last.length);
          return hits.map((a) => ({ value: `${head}${a.name}=`, label: `${a.name}=`, description: a.description }));
        },
        handler: (args: string, ctx: ExtensionCommandContext) => this.run(name, args, ctx),
      });
    }
  }
}
