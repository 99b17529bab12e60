// The 2025-era end-to-end bench server on the official TypeScript SDK v1
// (`@modelcontextprotocol/sdk`, pinned by scripts/bench.sh), served on node:http the way the SDK's
// own stateful Streamable HTTP example does it: one `McpServer` and one
// `StreamableHTTPServerTransport` per session, kept in a map by `Mcp-Session-Id`.
//
// Same two tools as `bench-server`: `ask_name` pushes one form `elicitation/create`
// (`{name: string}`) on the call's own SSE stream (`relatedRequestId`), awaits the client's answer
// and greets the name; `plain` completes at once. One Node process.
//
//     node typescript_v1_server.mjs [PORT]        # serves http://127.0.0.1:PORT/mcp (default 8947)

import { randomUUID } from 'node:crypto';

import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';

import { NAME_SCHEMA, serveMcp, text } from './peer_http.mjs';

const port = Number(process.argv[2] ?? 8947);

function newServer() {
    const server = new McpServer({ name: 'elicit-bench-typescript-v1', version: '0.1.0' });
    server.registerTool('ask_name', { description: 'Asks for a name with one form, then greets it' }, async extra => {
        const answer = await server.server.elicitInput(
            { mode: 'form', message: 'What is your name?', requestedSchema: NAME_SCHEMA },
            { relatedRequestId: extra.requestId }
        );
        const name = answer.action === 'accept' ? answer.content?.name : undefined;
        return text(typeof name === 'string' ? `Hello, ${name}!` : 'Hello, stranger!');
    });
    server.registerTool('plain', { description: 'Answers at once' }, async () => text('pong'));
    return server;
}

// Live sessions by id.
const transports = new Map();

function readBody(req) {
    return new Promise((resolve, reject) => {
        const chunks = [];
        req.on('data', chunk => chunks.push(chunk));
        req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
        req.on('error', reject);
    });
}

function jsonRpcError(res, status, message) {
    res.writeHead(status, { 'Content-Type': 'application/json' }).end(
        JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message } })
    );
}

async function handle(req, res) {
    const sessionId = req.headers['mcp-session-id'];
    let body;
    if (req.method === 'POST') {
        try {
            body = JSON.parse(await readBody(req));
        } catch {
            jsonRpcError(res, 400, 'Parse error');
            return;
        }
    }
    let transport = typeof sessionId === 'string' ? transports.get(sessionId) : undefined;
    if (transport === undefined) {
        if (sessionId !== undefined) {
            jsonRpcError(res, 404, 'Session not found');
            return;
        }
        if (req.method !== 'POST' || !isInitializeRequest(body)) {
            jsonRpcError(res, 400, 'No valid session id');
            return;
        }
        transport = new StreamableHTTPServerTransport({
            sessionIdGenerator: () => randomUUID(),
            onsessioninitialized: id => transports.set(id, transport)
        });
        transport.onclose = () => {
            if (transport.sessionId) transports.delete(transport.sessionId);
        };
        await newServer().connect(transport);
    }
    await transport.handleRequest(req, res, body);
}

serveMcp('typescript_v1_server', port, handle);
