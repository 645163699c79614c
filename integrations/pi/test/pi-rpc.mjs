// A pi process in RPC mode (JSON lines on stdin/stdout) with the given extensions, whose events
// carry the time they arrived (performance.now(), ms). The tests and the benchmark build on it.
import { spawn } from "node:child_process";
import { performance } from "node:perf_hooks";

export class PiRpc {
  /**
   * cfg: harness config() (node, cli); box: harness sandbox(); extensions: paths for `-e`
   * (the benchmark's model first); env: added to the sandbox's.
   */
  constructor(cfg, box, { extensions, env = {}, args = [] }) {
    this.events = [];
    this.waiters = [];
    this.stderr = "";
    this.exited = new Promise((done) => (this.onExit = done));
    this.spawnedAt = performance.now();
    this.child = spawn(cfg.node, [cfg.cli, "--mode", "rpc", "--no-session", "--offline",
      ...extensions.flatMap((e) => ["-e", e]), "--provider", "faux", "--model", "faux-1", ...args], {
      cwd: box.project,
      env: { ...box.env, ...env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    this.pid = this.child.pid;
    let buffer = "";
    this.child.stdout.setEncoding("utf8").on("data", (chunk) => {
      const at = performance.now();
      buffer += chunk;
      let i;
      while ((i = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, i);
        buffer = buffer.slice(i + 1);
        if (!line.trim()) continue;
        let event;
        try {
          event = JSON.parse(line);
        } catch {
          event = { type: "non-json", line };
        }
        event.at = at;
        this.events.push(event);
      }
      this.check();
    });
    this.child.stderr.setEncoding("utf8").on("data", (d) => (this.stderr += d));
    this.child.on("exit", (code, signal) => {
      this.exitStatus = { code, signal };
      this.onExit(this.exitStatus);
      this.check();
    });
  }

  send(command) {
    this.child.stdin.write(`${JSON.stringify(command)}\n`);
  }

  check() {
    this.waiters = this.waiters.filter((w) => {
      let hit;
      for (let i = w.from; i < this.events.length; i++) {
        if (w.predicate(this.events[i])) {
          hit = this.events[i];
          break;
        }
      }
      if (hit) w.resolve(hit);
      else if (this.exitStatus) w.reject(new Error(`pi exited (${JSON.stringify(this.exitStatus)}) while waiting for ${w.what}\nstderr:\n${this.stderr.slice(-3000)}`));
      else {
        w.from = this.events.length;
        return true;
      }
      clearTimeout(w.timer);
      return false;
    });
  }

  /** Resolves with the first event from index `from` on that matches. */
  waitFor(predicate, what, { from = 0, timeoutMs = 60_000 } = {}) {
    return new Promise((resolvePromise, reject) => {
      const w = { predicate, what, from, resolve: resolvePromise, reject };
      w.timer = setTimeout(() => {
        this.waiters = this.waiters.filter((x) => x !== w);
        reject(new Error(`timed out waiting for ${what}\nstderr:\n${this.stderr.slice(-3000)}`));
      }, timeoutMs);
      this.waiters.push(w);
      this.check();
    });
  }

  /** Sends a command and resolves with pi's response to it. */
  async request(command, timeoutMs) {
    const id = `r${this.events.length}-${Math.random().toString(36).slice(2, 8)}`;
    const from = this.events.length;
    this.send({ ...command, id });
    return this.waitFor((e) => e.type === "response" && e.id === id, `response to ${command.type}`, { from, timeoutMs });
  }

  /** Closes stdin (pi's orderly shutdown) and waits for the exit; SIGKILL after timeoutMs. */
  async close(timeoutMs = 20_000) {
    if (this.exitStatus) return this.exitStatus;
    this.child.stdin.end();
    const timer = setTimeout(() => this.child.kill("SIGKILL"), timeoutMs);
    const status = await this.exited;
    clearTimeout(timer);
    return status;
  }

  kill() {
    if (!this.exitStatus) this.child.kill("SIGKILL");
  }
}
