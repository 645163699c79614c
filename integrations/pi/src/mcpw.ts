// Finding the mcpw binary and running its one-shot commands (tools, status, connect, auth).
import { spawn } from "node:child_process";
import { accessSync, constants, statSync } from "node:fs";
import { delimiter, isAbsolute, join, resolve } from "node:path";

/**
 * Every mcpw command also reads pi's MCP config (agent dir and project `.pi/mcp.json`), unless pi
 * serves that config itself (pi 1.x's built-in MCP): the servers would then run twice.
 */
let importPi = true;

/** The options every mcpw command gets. */
export function globalArgs(): string[] {
  return importPi ? ["--import", "pi"] : [];
}

/** pi runs the servers of its own `mcp.json`: mcpw serves its own config alone. */
export function leavePiConfigToPi(): void {
  importPi = false;
}

/** Whether this pi has MCP support of its own (pi 0.99 and later can register MCP servers). */
export function piHasOwnMcp(pi: object): boolean {
  return typeof (pi as { registerMcpServer?: unknown }).registerMcpServer === "function";
}

export class McpwNotFoundError extends Error {
  constructor(detail: string) {
    super(`mcpw not found: ${detail}. Install mcpw and put it on PATH, or set MCPW_BIN to its path.`);
    this.name = "McpwNotFoundError";
  }
}

function isExecutable(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false;
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** `$MCPW_BIN` if set, else `mcpw` on PATH. Throws McpwNotFoundError. */
export function findMcpw(env: NodeJS.ProcessEnv = process.env): string {
  const explicit = env.MCPW_BIN;
  if (explicit) {
    const path = isAbsolute(explicit) || explicit.includes("/") ? resolve(explicit) : undefined;
    if (path) {
      if (isExecutable(path)) return path;
      throw new McpwNotFoundError(`MCPW_BIN=${explicit} is not an executable file`);
    }
    const onPath = searchPath(explicit, env);
    if (onPath) return onPath;
    throw new McpwNotFoundError(`MCPW_BIN=${explicit} is not on PATH`);
  }
  const onPath = searchPath("mcpw", env);
  if (onPath) return onPath;
  throw new McpwNotFoundError("no `mcpw` on PATH and MCPW_BIN is not set");
}

function searchPath(name: string, env: NodeJS.ProcessEnv): string | undefined {
  for (const dir of (env.PATH ?? "").split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, name);
    if (isExecutable(candidate)) return candidate;
  }
  return undefined;
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `mcpw <global args> <args>` to completion. `onLine` sees stdout and stderr lines as they
 * come (auth login prints the URL to open long before it exits).
 */
export function runMcpw(
  bin: string,
  args: string[],
  options: { cwd: string; timeoutMs?: number; signal?: AbortSignal; onLine?: (line: string) => void },
): Promise<RunResult> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(bin, [...globalArgs(), ...args], {
      cwd: options.cwd,
      env: { ...process.env },
      stdio: ["ignore", "pipe", "pipe"],
      signal: options.signal,
    });
    let stdout = "";
    let stderr = "";
    let partial = "";
    const feed = (chunk: string) => {
      if (!options.onLine) return;
      partial += chunk;
      let i: number;
      while ((i = partial.indexOf("\n")) >= 0) {
        options.onLine(partial.slice(0, i));
        partial = partial.slice(i + 1);
      }
    };
    child.stdout.setEncoding("utf8").on("data", (d: string) => { stdout += d; feed(d); });
    child.stderr.setEncoding("utf8").on("data", (d: string) => { stderr += d; feed(d); });
    const timer = options.timeoutMs ? setTimeout(() => child.kill("SIGTERM"), options.timeoutMs) : undefined;
    child.on("error", (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(err.code === "ENOENT" ? new McpwNotFoundError(`${bin} does not exist`) : err);
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      if (partial && options.onLine) options.onLine(partial);
      resolvePromise({ code, stdout, stderr });
    });
  });
}
