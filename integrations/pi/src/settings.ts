// Settings of the extension: which exposure mcpw serves, where its stderr goes, how long a call may take.
import { tmpdir } from "node:os";
import { join } from "node:path";

export type Exposure = "proxy" | "tool-search" | "direct" | "code" | "auto";
export const EXPOSURES: readonly Exposure[] = ["proxy", "tool-search", "direct", "code", "auto"];

/** The pi flag (`pi --mcpw-exposure direct`) that picks the exposure for one run. */
export const EXPOSURE_FLAG = "mcpw-exposure";
/** The environment variable that picks the exposure when the flag is not given. */
export const EXPOSURE_ENV = "MCPW_PI_EXPOSURE";

export function parseExposure(value: unknown): Exposure | undefined {
  return typeof value === "string" && (EXPOSURES as readonly string[]).includes(value) ? (value as Exposure) : undefined;
}

/**
 * The flag's value as given on the command line. pi parses extension flags only after every
 * extension's factory has run, so the factory (which lists the tools to register before the
 * first prompt) reads the arguments itself; session_start then checks `pi.getFlag`.
 */
export function exposureFromArgv(argv: readonly string[] = process.argv): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === `--${EXPOSURE_FLAG}`) return argv[i + 1];
    if (arg.startsWith(`--${EXPOSURE_FLAG}=`)) return arg.slice(EXPOSURE_FLAG.length + 3);
  }
  return undefined;
}

/** Flag first, then the environment, else proxy. An unknown value is reported, not guessed at. */
export function resolveExposure(flag: unknown): { exposure: Exposure; problem?: string } {
  for (const [source, value] of [[`--${EXPOSURE_FLAG}`, flag], [EXPOSURE_ENV, process.env[EXPOSURE_ENV]]] as const) {
    if (value === undefined || value === "" || typeof value === "boolean") continue;
    const exposure = parseExposure(value);
    if (exposure) return { exposure };
    return { exposure: "proxy", problem: `${source}=${String(value)} is not one of ${EXPOSURES.join(", ")}; using proxy` };
  }
  return { exposure: "proxy" };
}

/**
 * How long one tool call may take. Progress notifications restart the clock; mcpw applies each
 * server's own callTimeoutMs (2 minutes by default) below this.
 */
export function callTimeoutMs(): number {
  const n = Number(process.env.MCPW_PI_CALL_TIMEOUT_MS);
  return Number.isFinite(n) && n > 0 ? n : 10 * 60_000;
}

/** mcpw's stderr goes here: inheriting it would write over pi's TUI. */
export function logFile(): string {
  return join(tmpdir(), `mcpw-pi-${process.pid}.log`);
}

/** `MCPW_PI_VIEWS=off` keeps mcpw from serving views of MCP Apps (and their page) for pi. */
export const VIEWS_ENV = "MCPW_PI_VIEWS";

/** Whether mcpw serves the views of MCP Apps for pi to offer. */
export function viewsWanted(): boolean {
  return process.env[VIEWS_ENV] !== "off";
}
