// A 2025-11-25 MCP server on the official TypeScript SDK v1 (@modelcontextprotocol/sdk, pinned by
// scripts/install-peers.sh into .tools/peers/ts-v1), for the `elicit` client's dual-era tests.
//
//   node tests/peers/ts_v1_server.mjs            stdio
//   node tests/peers/ts_v1_server.mjs --http     Streamable HTTP with sessions on 127.0.0.1, a free
//                                                port; prints "listening <url>" on stdout
//
// Tools:
//   profile     form elicitation using every schema kind, legacy `enumNames` included
//   connect     URL elicitation; on accept sends notifications/elicitation/complete after
//               `completeAfterMs` (argument, default 300; -1 = never, and the call never returns)
//   needs_url   answers -32042 (URLElicitationRequiredError) until its page is completed (the
//               completion notification follows 300 ms after the error), then succeeds
//   flood       pushes `count` elicitations at once (hostile)
//   stray       sends a completion notification for an id nobody knows, then returns (hostile)
// With ELICIT_PEER_PUSH_ON_INIT=1 the server pushes elicitation/create as soon as the session is
// initialized, outside any call (hostile). ELICIT_PEER_LOG=FILE appends what the server saw
// (cancellations, elicitation answers) as JSON lines.
import { randomUUID } from "node:crypto";
import { appendFileSync } from "node:fs";
import http from "node:http";

const sdk = new URL("../../.tools/peers/ts-v1/node_modules/@modelcontextprotocol/sdk/dist/esm/", import.meta.url);
const { Server } = await import(new URL("server/index.js", sdk));
const { StdioServerTransport } = await import(new URL("server/stdio.js", sdk));
const { StreamableHTTPServerTransport } = await import(new URL("server/streamableHttp.js", sdk));
const types = await import(new URL("types.js", sdk));
const { CallToolRequestSchema, ListToolsRequestSchema, UrlElicitationRequiredError, isInitializeRequest } = types;

const log = (entry) => {
  if (process.env.ELICIT_PEER_LOG) appendFileSync(process.env.ELICIT_PEER_LOG, JSON.stringify(entry) + "\n");
};
const text = (t) => ({ content: [{ type: "text", text: t }] });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const PROFILE_SCHEMA = {
  type: "object",
  properties: {
    name: { type: "string", title: "Full name", minLength: 2, maxLength: 40 },
    email: { type: "string", title: "E-mail", format: "email" },
    age: { type: "integer", title: "Age", minimum: 0, maximum: 150, default: 30 },
    height: { type: "number", title: "Height (m)", minimum: 0.5, maximum: 2.5 },
    newsletter: { type: "boolean", title: "Newsletter", default: false },
    plan: { type: "string", title: "Plan", enum: ["free", "pro"] },
    seat: { type: "string", title: "Seat", oneOf: [{ const: "w", title: "Window" }, { const: "a", title: "Aisle" }] },
    meal: { type: "string", title: "Meal", enum: ["veg", "fish"], enumNames: ["Vegetarian", "Fish of the day"] },
    tags: { type: "array", title: "Tags", items: { type: "string", enum: ["red", "green", "blue"] }, maxItems: 2 },
    extras: { type: "array", title: "Extras", items: { anyOf: [{ const: "bag", title: "Checked bag" }, { const: "wifi", title: "Wi-Fi" }] } },
  },
  required: ["name", "email", "plan"],
};

const TOOLS = [
  { name: "profile", description: "Asks for a profile with a form", inputSchema: { type: "object", properties: {} } },
  { name: "connect", description: "Sends the user to a page (URL mode)", inputSchema: { type: "object", properties: { completeAfterMs: { type: "number" } } } },
  { name: "needs_url", description: "Answers -32042 until a page is completed", inputSchema: { type: "object", properties: {} } },
  { name: "flood", description: "Pushes many elicitations at once", inputSchema: { type: "object", properties: { count: { type: "number" } } } },
  { name: "stray", description: "Completes an elicitation nobody asked for", inputSchema: { type: "object", properties: {} } },
];

// One process: -32042 steps completed so far (shared by the sessions of an HTTP server).
const completed = new Set();

function makeServer() {
  const server = new Server({ name: "ts-v1-peer", version: "1.0.0" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: TOOLS }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const args = request.params.arguments ?? {};
    extra.signal.addEventListener("abort", () => log({ cancelled: request.params.name, reason: String(extra.signal.reason ?? "") }));
    switch (request.params.name) {
      case "profile": {
        const answer = await server.elicitInput({ mode: "form", message: "Tell us about you", requestedSchema: PROFILE_SCHEMA }, { relatedRequestId: extra.requestId });
        log({ tool: "profile", answer });
        return text(`profile: action=${answer.action} content=${JSON.stringify(answer.content ?? null)}`);
      }
      case "connect": {
        const id = randomUUID();
        const answer = await server.elicitInput(
          { mode: "url", message: "Connect your account", url: `https://auth.example.com/connect?session=${id}`, elicitationId: id },
          { relatedRequestId: extra.requestId, timeout: 600000 },
        );
        log({ tool: "connect", answer });
        if (answer.action !== "accept") return text(`connect: action=${answer.action}`);
        const after = typeof args.completeAfterMs === "number" ? args.completeAfterMs : 300;
        if (after < 0) {
          await new Promise((resolve) => extra.signal.addEventListener("abort", resolve));
          return text("connect: cancelled");
        }
        await sleep(after);
        await server.createElicitationCompletionNotifier(id, { relatedRequestId: extra.requestId })();
        await sleep(100);
        return text("connect: action=accept, completed");
      }
      case "needs_url": {
        const done = [...completed].find((id) => id.startsWith("needs_url:"));
        if (done) {
          completed.delete(done);
          return text("needs_url: done");
        }
        const id = `needs_url:${randomUUID()}`;
        setTimeout(() => {
          completed.add(id);
          server.createElicitationCompletionNotifier(id)().catch(() => {});
        }, 300);
        throw new UrlElicitationRequiredError(
          [{ mode: "url", message: "Authorize access first", url: `https://auth.example.com/authorize?id=${id}`, elicitationId: id }],
          "This tool needs authorization",
        );
      }
      case "flood": {
        const count = typeof args.count === "number" ? args.count : 200;
        const form = { mode: "form", message: "Flood", requestedSchema: { type: "object", properties: { x: { type: "string" } } } };
        const results = await Promise.allSettled(
          Array.from({ length: count }, () => server.elicitInput(form, { relatedRequestId: extra.requestId, timeout: 20000 })),
        );
        return text(`flood: ${results.filter((r) => r.status === "fulfilled").length} answered`);
      }
      case "stray": {
        await server.createElicitationCompletionNotifier("nobody-asked-for-this", { relatedRequestId: extra.requestId })();
        await sleep(100);
        return text("stray: done");
      }
      default:
        throw new Error(`unknown tool ${request.params.name}`);
    }
  });
  server.oninitialized = () => {
    if (process.env.ELICIT_PEER_PUSH_ON_INIT === "1") {
      const form = { mode: "form", message: "Outside any call", requestedSchema: { type: "object", properties: { x: { type: "string" } } } };
      server.elicitInput(form).then(
        (answer) => log({ outside: "answered", answer }),
        (error) => log({ outside: "refused", code: error.code, message: error.message }),
      );
    }
  };
  return server;
}

if (process.argv.includes("--http")) {
  const transports = new Map();
  const httpServer = http.createServer(async (req, res) => {
    try {
      const chunks = [];
      for await (const chunk of req) chunks.push(chunk);
      let body;
      if (req.method === "POST") {
        try {
          body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
        } catch {
          res.writeHead(400, { "content-type": "application/json" }).end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32700, message: "Parse error" }, id: null }));
          return;
        }
      }
      const sid = req.headers["mcp-session-id"];
      let transport = sid ? transports.get(sid) : undefined;
      if (!transport) {
        if (req.method !== "POST" || !isInitializeRequest(body)) {
          res.writeHead(400, { "content-type": "application/json" }).end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message: "Bad Request: No valid session ID provided" }, id: null }));
          return;
        }
        transport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (id) => transports.set(id, transport),
        });
        transport.onclose = () => transport.sessionId && transports.delete(transport.sessionId);
        await makeServer().connect(transport);
      }
      await transport.handleRequest(req, res, body);
    } catch (error) {
      if (!res.headersSent) res.writeHead(500).end(String(error));
    }
  });
  httpServer.listen(0, "127.0.0.1", () => {
    console.log(`listening http://127.0.0.1:${httpServer.address().port}/mcp`);
  });
} else {
  // The client is gone when stdin closes: leave at once, whatever is still pending (a flood's
  // elicitations, a never-ending URL step), so no orphan holds the client's pipes.
  process.stdin.on("close", () => process.exit(0));
  process.stdout.on("error", () => process.exit(0));
  await makeServer().connect(new StdioServerTransport());
}
