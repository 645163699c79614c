// mcpw's tools as pi tools: registration, keeping them in step with mcpw's list, and execution.
import type { ExtensionAPI, ToolDefinition } from "@mariozechner/pi-coding-agent";
import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import { toPiResult, type PiToolResult } from "./content.ts";
import { show, type Shown } from "./commands.ts";
import type { CallOptions } from "./connection.ts";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";

/** Calls a tool on the session's mcpw connection. */
export type Caller = (name: string, args: Record<string, unknown>, options: CallOptions) => Promise<CallToolResult>;

/** mcpw's own proxy tool: its structuredContent is a details object for hosts, not for the model. */
const PROXY_TOOL = "mcp";
/** mcpw's code tool (code mode): its structuredContent (value, logs, calls) is such a details object too. */
const CODE_TOOL = "code";

/** pi's type of tool parameters: a TypeBox schema, which is a JSON Schema object at run time. */
type Parameters = ToolDefinition["parameters"];

/** A JSON Schema as pi's parameter type; pi reads it as the JSON Schema it is. */
function asParameters(schema: Record<string, unknown>): Parameters {
  return schema as unknown as Parameters;
}

/** A JSON Schema pi accepts as tool parameters: always an object schema. */
function parameters(tool: Tool): Parameters {
  const schema: Record<string, unknown> = { ...(tool.inputSchema ?? {}) };
  schema.type = "object";
  if (typeof schema.properties !== "object" || schema.properties === null) schema.properties = {};
  return asParameters(schema);
}

/** A tool call's arguments as an object (pi validated them against the object schema). */
function objectOf(params: unknown): Record<string, unknown> {
  return typeof params === "object" && params !== null ? { ...params } : {};
}

function fingerprint(tool: Tool): string {
  return JSON.stringify([tool.description ?? "", tool.inputSchema ?? {}, tool.title ?? ""]);
}

export class ToolSet {
  /** Every tool this extension registered, by name, with what it was registered from. */
  private readonly registered = new Map<string, string>();
  /** Names in mcpw's latest list (registered tools not in it are deactivated). */
  private current = new Set<string>();
  /** Every tool that joined the list, in order: what a call added is the part after its mark. */
  private readonly additions: string[] = [];
  /**
   * Whether a tool registered during a run can be called in that run's next turn. pi 1.x reads
   * the tool list at each turn; 0.73 fixes it when the run starts (only 1.x has registerMcpServer).
   */
  private readonly toolsJoinRunningTurn: boolean;

  constructor(private readonly pi: ExtensionAPI, private readonly caller: () => Caller) {
    this.toolsJoinRunningTurn = typeof (pi as { registerMcpServer?: unknown }).registerMcpServer === "function";
  }

  has(name: string): boolean {
    return this.registered.has(name);
  }

  /** The tools of mcpw's latest list that are active in pi. */
  activeNames(): string[] {
    const active = new Set(this.pi.getActiveTools());
    return [...this.current].filter((name) => active.has(name));
  }

  /**
   * Makes pi's tools match mcpw's list: registers new and changed tools (and activates them),
   * deactivates tools mcpw no longer lists. pi cannot unregister a tool; deactivating keeps it
   * from the model. `registerOnly`: while pi loads extensions the active set cannot be read or
   * set yet (new tools start active anyway).
   */
  sync(tools: Tool[], options: { registerOnly?: boolean } = {}): { added: string[]; removed: string[] } {
    const next = new Set(tools.map((t) => t.name));
    const added: string[] = [];
    for (const tool of tools) {
      const print = fingerprint(tool);
      const known = this.registered.get(tool.name);
      if (known !== print) this.register(tool, print);
      if (known === undefined || !this.current.has(tool.name)) added.push(tool.name);
    }
    const removed = [...this.current].filter((name) => !next.has(name));
    this.current = next;
    this.additions.push(...added);
    if (!options.registerOnly && (added.length || removed.length)) {
      const gone = new Set(removed);
      const active = this.pi.getActiveTools().filter((name) => !gone.has(name));
      for (const name of added) if (!active.includes(name)) active.push(name);
      this.pi.setActiveTools(active);
    }
    return { added, removed };
  }

  private register(tool: Tool, print: string): void {
    const name = tool.name;
    this.registered.set(name, print);
    this.pi.registerTool({
      name,
      label: `mcpw: ${tool.title ?? tool.annotations?.title ?? name}`,
      description: tool.description || `MCP tool ${name} (through mcpw)`,
      parameters: parameters(tool),
      execute: (_toolCallId, params, signal, onUpdate, ctx) => this.execute(name, objectOf(params), signal, onUpdate, ctx),
    });
  }

  private async execute(
    name: string,
    args: Record<string, unknown>,
    signal: AbortSignal | undefined,
    onUpdate: ((partial: PiToolResult) => void) | undefined,
    ctx?: Shown,
  ): Promise<PiToolResult> {
    if (signal?.aborted) throw new Error(`${name}: aborted`);
    // A controller of our own, so that the listener on pi's signal (one per prompt, shared by
    // every call in it) is removed when this call ends; the SDK sends notifications/cancelled
    // to mcpw when this one aborts.
    const controller = new AbortController();
    const forward = () => controller.abort(signal?.reason);
    signal?.addEventListener("abort", forward, { once: true });
    const mark = this.additions.length;
    try {
      const result = await this.caller()(name, args, {
        signal: controller.signal,
        onProgress: (p) => {
          const text = p.message ?? (p.total !== undefined ? `progress ${p.progress}/${p.total}` : `progress ${p.progress}`);
          onUpdate?.({ content: [{ type: "text", text }], details: { progress: p.progress, total: p.total, message: p.message } });
        },
      });
      const mapped = toPiResult(result, name, { structuredInDetails: name === PROXY_TOOL || name === CODE_TOOL });
      offerView(result, name, mapped, ctx);
      // The call returns after mcpw's announced re-list is done, so its new tools are registered.
      const added = this.additions.slice(mark);
      if (added.length) {
        mapped.details.toolsAdded = added;
        if (!this.toolsJoinRunningTurn) {
          mapped.content.push({ type: "text", text: `\n[This pi version adds tools between prompts: ${added.join(", ")} can be called from the next user message on, not in this one.]` });
        }
      }
      return mapped;
    } catch (err) {
      if (controller.signal.aborted) throw new Error(`${name}: aborted`);
      throw err instanceof Error ? err : new Error(String(err));
    } finally {
      signal?.removeEventListener("abort", forward);
    }
  }

  /**
   * Registers a stand-in `mcp` tool when mcpw cannot be run at all (proxy exposure), so that the
   * model gets the reason as a tool error instead of finding no tool.
   */
  registerUnavailable(reason: () => string): void {
    if (this.registered.has(PROXY_TOOL)) return;
    this.registered.set(PROXY_TOOL, "unavailable");
    this.current.add(PROXY_TOOL);
    this.pi.registerTool({
      name: PROXY_TOOL,
      label: "mcpw: mcp",
      description: "Gateway to the user's MCP servers through mcpw (currently unavailable; calling it reports why).",
      parameters: asParameters({ type: "object", properties: {}, additionalProperties: true }),
      execute: async () => {
        throw new Error(reason());
      },
    });
  }
}

/** The `_meta` key of the view mcpw opened for a result (an MCP App's, which pi cannot render). */
const VIEW_KEY = "mcpw/view";

/**
 * Offers the user the view mcpw opened for a result: its address in a notification (the user's,
 * not the model's) and in the result's details.
 */
function offerView(result: CallToolResult, name: string, mapped: PiToolResult, ctx: Shown): void {
  const view = (result._meta as Record<string, { url?: unknown } | undefined> | undefined)?.[VIEW_KEY];
  if (typeof view?.url !== "string") return;
  mapped.details.view = view.url;
  show(ctx, `${name} has a view: open ${view.url}`);
}
