// The one `mcpw serve` child of a pi session: spawning, respawning after a crash, calls, and
// re-listing tools when mcpw announces a change.
import { createWriteStream, readFileSync, type WriteStream } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import {
  CallToolResultSchema,
  ElicitRequestSchema,
  ErrorCode,
  McpError,
  PromptListChangedNotificationSchema,
  ToolListChangedNotificationSchema,
  type CallToolResult,
  type ElicitRequest,
  type ElicitResult,
  type GetPromptResult,
  type Progress,
  type Prompt,
  type Tool,
} from "@modelcontextprotocol/sdk/types.js";
import { globalArgs } from "./mcpw.ts";
import { viewsWanted } from "./settings.ts";
import type { Exposure } from "./settings.ts";

/** The package's name and version, as its package.json says, tell mcpw who the client is. */
function clientInfo(): { name: string; version: string } {
  try {
    const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
    return { name: String(pkg.name), version: String(pkg.version) };
  } catch {
    return { name: "mcpw-pi", version: "unknown" };
  }
}

const CLIENT_INFO = clientInfo();
/** Lines of mcpw's stderr kept for error messages (all of it goes to the log file). */
const STDERR_TAIL = 20;

export interface GatewayOptions {
  bin: string;
  exposure: Exposure;
  cwd: string;
  logFile: string;
  callTimeoutMs: number;
  /** Called with mcpw's full tool list after each list change it announces. */
  onTools: (tools: Tool[]) => void | Promise<void>;
  onPrompts: (prompts: Prompt[]) => void | Promise<void>;
  /**
   * Answers mcpw's questions to the user (an approval, or a server's own question passed on);
   * without it the client does not take them.
   */
  elicit?: (request: ElicitRequest["params"]) => Promise<ElicitResult>;
}

/** One live `mcpw serve` process and its MCP client. */
class Connection {
  closed = false;

  private constructor(
    readonly client: Client,
    readonly transport: StdioClientTransport,
  ) {}

  static async open(options: GatewayOptions, stderrTail: string[], log: WriteStream, onClosed: (c: Connection) => void,
    onToolsChanged: () => void, onPromptsChanged: () => void): Promise<Connection> {
    const transport = new StdioClientTransport({
      command: options.bin,
      // --page: mcpw shows the views of MCP Apps (which pi cannot render) on a loopback page.
      args: [...globalArgs(), "serve", "--exposure", options.exposure, ...(viewsWanted() ? ["--page"] : [])],
      // The SDK passes only an allowlist of variables by default; servers need the user's whole
      // environment (tokens, PATH additions, PI_CODING_AGENT_DIR for --import pi).
      env: { ...process.env } as Record<string, string>,
      cwd: options.cwd,
      stderr: "pipe",
    });
    transport.stderr?.on("data", (chunk: Buffer) => {
      log.write(chunk);
      for (const line of chunk.toString("utf8").split("\n")) {
        if (!line.trim()) continue;
        stderrTail.push(line);
        if (stderrTail.length > STDERR_TAIL) stderrTail.shift();
      }
    });
    const client = new Client(CLIENT_INFO, { capabilities: options.elicit ? { elicitation: {} } : {} });
    const elicit = options.elicit;
    if (elicit) client.setRequestHandler(ElicitRequestSchema, (request) => elicit(request.params));
    const connection = new Connection(client, transport);
    client.onclose = () => {
      connection.closed = true;
      onClosed(connection);
    };
    // Registered before connect so that no announcement is lost. The handlers only start a
    // re-list; the SDK runs them before it resolves a call whose result arrives after them.
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => onToolsChanged());
    client.setNotificationHandler(PromptListChangedNotificationSchema, () => onPromptsChanged());
    try {
      await client.connect(transport);
    } catch (err) {
      connection.closed = true;
      await transport.close().catch(() => {});
      throw err;
    }
    deliverResponsesLast(transport);
    return connection;
  }

  get pid(): number | null {
    return this.transport.pid;
  }

  /**
   * Whether the mcpw process still runs. Its exit reaches the client only when pi's event loop
   * gets to it; a call sent before then would fail, so a call checks the process first.
   */
  alive(): boolean {
    if (this.closed) return false;
    const pid = this.transport.pid;
    if (!pid) return false;
    try {
      // Linux: a process killed but not yet reaped is a zombie (state Z).
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
      return state !== "Z" && state !== "X";
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT" && process.platform === "linux") return false;
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    }
  }

  async listTools(): Promise<Tool[]> {
    const tools: Tool[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.client.listTools(cursor ? { cursor } : undefined);
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    return tools;
  }

  async listPrompts(): Promise<Prompt[]> {
    if (!this.client.getServerCapabilities()?.prompts) return [];
    const prompts: Prompt[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.client.listPrompts(cursor ? { cursor } : undefined);
      prompts.push(...page.prompts);
      cursor = page.nextCursor;
    } while (cursor);
    return prompts;
  }

  async close(): Promise<void> {
    this.closed = true;
    // Ends mcpw's stdin (it then stops its servers), then SIGTERM, then SIGKILL.
    await this.client.close().catch(() => {});
  }
}

/**
 * The SDK handles a notification in a microtask but a response at once, and forgets a call's
 * progress handler with its response: the last progress of a call, sent just before its result,
 * would be lost. Responses are handed on a macrotask later, after what came before them.
 */
function deliverResponsesLast(transport: StdioClientTransport): void {
  const deliver = transport.onmessage;
  if (!deliver) return;
  transport.onmessage = (message) => {
    const isResponse = "id" in message && !("method" in message);
    if (isResponse) setImmediate(() => deliver(message));
    else deliver(message);
  };
}

/** Runs a job again when asked while it runs, once, however often it was asked meanwhile. */
class Coalescer {
  private running: Promise<void> | undefined;
  private again = false;

  constructor(private readonly job: () => Promise<void>, private readonly onError: (err: unknown) => void) {}

  trigger(): void {
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = (async () => {
      do {
        this.again = false;
        try {
          await this.job();
        } catch (err) {
          this.onError(err);
        }
      } while (this.again);
    })().finally(() => {
      this.running = undefined;
    });
  }

  /** Resolves once no run is in progress or pending. */
  async settled(): Promise<void> {
    while (this.running) await this.running;
  }
}

export interface CallOptions {
  signal?: AbortSignal;
  onProgress?: (progress: Progress) => void;
}

/**
 * The session's gateway: spawns mcpw on first need, respawns it after it died, and keeps pi's
 * tools in step with mcpw's list.
 */
export class Gateway {
  private connection: Connection | undefined;
  private connecting: Promise<Connection> | undefined;
  private readonly stderrTail: string[] = [];
  private log: WriteStream | undefined;
  private disposed = false;
  private readonly toolRelist: Coalescer;
  private readonly promptRelist: Coalescer;
  /** Set when mcpw exited without being asked to; the next call says so if respawning fails too. */
  private lastExit: string | undefined;

  constructor(readonly options: GatewayOptions, private readonly warn: (message: string) => void) {
    this.toolRelist = new Coalescer(async () => {
      const connection = this.connection;
      if (!connection || connection.closed) return;
      await this.options.onTools(await connection.listTools());
    }, (err) => this.warn(`mcpw: re-listing tools failed: ${errorText(err)}`));
    this.promptRelist = new Coalescer(async () => {
      const connection = this.connection;
      if (!connection || connection.closed) return;
      await this.options.onPrompts(await connection.listPrompts());
    }, (err) => this.warn(`mcpw: re-listing prompts failed: ${errorText(err)}`));
  }

  get pid(): number | null {
    return this.connection && !this.connection.closed ? this.connection.pid : null;
  }

  get connected(): boolean {
    return !!this.connection && !this.connection.closed;
  }

  /** The live connection, spawning mcpw if there is none (one spawn however many callers wait). */
  async connect(): Promise<Connection> {
    if (this.disposed) throw new Error("mcpw: the pi session has ended");
    if (this.connection?.alive()) return this.connection;
    if (this.connection) {
      // Dead but not yet noticed: close our end, and start a new one.
      const dead = this.connection;
      this.closed(dead);
      void dead.close();
    }
    if (!this.connecting) {
      this.log ??= createWriteStream(this.options.logFile, { flags: "a" });
      this.log.write(`--- ${new Date().toISOString()} mcpw ${[...globalArgs(), "serve"].join(" ")} --exposure ${this.options.exposure} (cwd ${this.options.cwd})\n`);
      this.connecting = Connection.open(this.options, this.stderrTail, this.log, (c) => this.closed(c),
        () => this.toolRelist.trigger(), () => this.promptRelist.trigger())
        .then((c) => {
          if (this.disposed) {
            void c.close();
            throw new Error("mcpw: the pi session has ended");
          }
          this.connection = c;
          this.lastExit = undefined;
          return c;
        })
        .catch((err) => {
          throw new Error(`mcpw: could not start \`${[this.options.bin, ...globalArgs(), "serve"].join(" ")}\`: ${errorText(err)}${this.stderrHint()}`);
        })
        .finally(() => {
          this.connecting = undefined;
        });
    }
    return this.connecting;
  }

  private closed(connection: Connection): void {
    if (this.connection !== connection) return;
    this.connection = undefined;
    if (!this.disposed) {
      this.lastExit = "mcpw serve exited";
      this.log?.write(`--- ${new Date().toISOString()} mcpw serve exited\n`);
    }
  }

  private stderrHint(): string {
    const tail = this.stderrTail.slice(-5).join("\n");
    return `${tail ? `\nmcpw stderr:\n${tail}` : ""}\n(full log: ${this.options.logFile})`;
  }

  /** Lists tools and prompts on the live connection and hands them to the callbacks. */
  async refresh(): Promise<Tool[]> {
    const connection = await this.connect();
    const tools = await connection.listTools();
    await this.options.onTools(tools);
    try {
      await this.options.onPrompts(await connection.listPrompts());
    } catch (err) {
      this.warn(`mcpw: listing prompts failed: ${errorText(err)}`);
    }
    return tools;
  }

  /**
   * Calls a tool by its mcpw name. A connection found closed is replaced first; a call that could
   * not be sent because the connection had just closed is made once more on a new one. A call
   * that mcpw had already taken when it died fails: it may have had effects. Returns only after
   * any re-list that mcpw announced during the call is done, so tools loaded by the call are
   * registered before the model's next turn.
   */
  async callTool(name: string, args: Record<string, unknown>, options: CallOptions = {}): Promise<CallToolResult> {
    try {
      return await this.callOnce(name, args, options);
    } catch (err) {
      if (options.signal?.aborted || !notSent(err) || this.disposed) throw err;
      this.log?.write(`--- ${new Date().toISOString()} ${name}: not sent (${errorText(err)}); respawning and sending it once more\n`);
      return await this.callOnce(name, args, options);
    } finally {
      await this.toolRelist.settled();
    }
  }

  private async callOnce(name: string, args: Record<string, unknown>, options: CallOptions): Promise<CallToolResult> {
    const connection = await this.connect();
    const result = await connection.client.callTool({ name, arguments: args }, CallToolResultSchema, {
      signal: options.signal,
      onprogress: options.onProgress,
      resetTimeoutOnProgress: true,
      timeout: this.options.callTimeoutMs,
    });
    return result as CallToolResult;
  }

  async getPrompt(name: string, args: Record<string, string>): Promise<GetPromptResult> {
    const connection = await this.connect();
    return await connection.client.getPrompt({ name, arguments: args });
  }

  /** Closes the connection (mcpw stops its servers); the next use spawns a new one. */
  async reset(): Promise<void> {
    const connection = this.connection;
    this.connection = undefined;
    await connection?.close();
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    const pending = this.connecting;
    await this.reset();
    await pending?.then((c) => c.close(), () => {});
    await new Promise<void>((done) => (this.log ? this.log.end(done) : done()));
  }

  describeExit(): string | undefined {
    return this.lastExit;
  }
}

export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** The request never reached mcpw (unlike ConnectionClosed, which may come after it did). */
function notSent(err: unknown): boolean {
  if (err instanceof McpError && err.code === ErrorCode.ConnectionClosed) return false;
  return /Not connected|EPIPE|write after end/i.test(errorText(err));
}
