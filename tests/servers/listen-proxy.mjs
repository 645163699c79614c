// A proxy on $PORT (path /mcp) in front of a real Streamable HTTP server at
// $UPSTREAM, for faults that server does not make on demand. Every request is
// forwarded and streamed back, except `subscriptions/listen` when
// LISTEN=hold: that one is held open and never answered. With METHODS_FILE,
// the method of each request is appended to that file, a line each.
import http from "node:http";
import fs from "node:fs";

const upstream = new URL(process.env.UPSTREAM);
const hold = process.env.LISTEN === "hold";
const held = [];

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const body = Buffer.concat(chunks);
    let method;
    try {
      method = JSON.parse(body.toString("utf8")).method;
    } catch {}
    if (method && process.env.METHODS_FILE) {
      fs.appendFileSync(process.env.METHODS_FILE, method + "\n");
    }
    if (hold && method === "subscriptions/listen") {
      held.push(res); // no status, no headers, no end
      return;
    }
    const headers = { ...req.headers, host: upstream.host };
    const forward = http.request(
      { host: upstream.hostname, port: upstream.port, path: upstream.pathname, method: req.method, headers },
      (answer) => {
        res.writeHead(answer.statusCode, answer.headers);
        answer.pipe(res);
      },
    );
    forward.on("error", () => res.destroy());
    res.on("close", () => forward.destroy());
    forward.end(body);
  });
});
server.listen(Number(process.env.PORT), "127.0.0.1");
