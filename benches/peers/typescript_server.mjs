// The end-to-end bench server on the official TypeScript SDK v2 (`@modelcontextprotocol/server`,
// protocol 2026-07-28), served by `@modelcontextprotocol/node` on node:http.
//
// Same two tools as `bench-server`: `ask_name` answers the first call with `input_required` holding
// one form elicitation (`{name: string}`) and completes on the retry that carries the answer and the
// echoed `requestState`; `plain` completes at once. The state is sealed with the SDK's own
// `createRequestStateCodec` (HMAC-SHA256, signed, bound to the method; the SDK seals nothing by
// default). Modern-only (`legacy: 'reject'`), JSON replies, one Node process.
//
//     node typescript_server.mjs [PORT]        # serves http://127.0.0.1:PORT/mcp (default 8933)

import { randomBytes } from 'node:crypto';

import { toNodeHandler } from '@modelcontextprotocol/node';
import { McpServer, acceptedContent, createMcpHandler, createRequestStateCodec, inputRequired } from '@modelcontextprotocol/server';

import { NAME_SCHEMA, serveMcp, text } from './peer_http.mjs';

const port = Number(process.argv[2] ?? 8933);

const codec = createRequestStateCodec({ key: randomBytes(32), ttlSeconds: 900, bind: ctx => ctx.mcpReq.method });

// The SDK builds one server instance per HTTP request from this factory (its serving model).
function factory() {
    const server = new McpServer({ name: 'elicit-bench-typescript', version: '0.1.0' }, { requestState: { verify: codec.verify } });
    server.registerTool('ask_name', { description: 'Asks for a name with one form, then greets it' }, async ctx => {
        const state = ctx.mcpReq.requestState();
        const answer = acceptedContent(ctx.mcpReq.inputResponses, 'name');
        if (state?.asked !== true || answer === undefined) {
            return inputRequired({
                inputRequests: { name: inputRequired.elicit({ message: 'What is your name?', requestedSchema: NAME_SCHEMA }) },
                requestState: await codec.mint({ asked: true }, ctx)
            });
        }
        return text(typeof answer.name === 'string' ? `Hello, ${answer.name}!` : 'Hello, stranger!');
    });
    server.registerTool('plain', { description: 'Answers at once' }, async () => text('pong'));
    return server;
}

const handler = createMcpHandler(factory, { legacy: 'reject', responseMode: 'json' });
serveMcp('typescript_server', port, toNodeHandler(handler));
