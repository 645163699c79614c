// MCP skills (the Skills extension) as pi skills: `mcpw skills export` writes every server's skills
// into folders pi loads, one folder per server, each file checked against the digest its server
// listed and `allowed-tools` dropped (what a skill may run is pi's to grant, not the server's).
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runMcpw } from "./mcpw.ts";

/** Where one export went: the folders to hand pi, and what to say of what failed. */
export interface Exported {
  /** The folder written into ("" when none could be made). */
  root: string;
  paths: string[];
  problem?: string;
}

/**
 * Exports every server's skills into a new folder of the session's temporary directory and
 * returns `<root>/<server>` for each server that has some. A failing export keeps what it wrote
 * (each skill is moved into place whole) and says why; it never throws.
 */
export async function exportSkills(bin: string, cwd: string): Promise<Exported> {
  let root = "";
  let problem: string | undefined;
  try {
    root = mkdtempSync(join(tmpdir(), "mcpw-pi-skills-"));
    const r = await runMcpw(bin, ["skills", "export", root, "--all"], { cwd, timeoutMs: 60_000 });
    if (r.code !== 0) problem = (r.stderr || r.stdout).trim() || `mcpw skills export exited with ${r.code}`;
  } catch (err) {
    problem = err instanceof Error ? err.message : String(err);
  }
  const paths = root && existsSync(root)
    ? readdirSync(root, { withFileTypes: true })
        .filter((e) => e.isDirectory() && !e.name.startsWith("."))
        .map((e) => join(root, e.name))
    : [];
  return { root, paths, problem };
}

/** Removes an export's folder (pi reads a skill's files from it for as long as it lists them). */
export function removeExport(root: string | undefined): void {
  if (root) rmSync(root, { recursive: true, force: true });
}
