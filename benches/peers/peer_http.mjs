// What the TypeScript bench servers share (typescript_server.mjs, SDK v2; typescript_v1_server.mjs,
// SDK v1): the `ask_name` form, a text result, and the node:http server that hands `/mcp` to the
// SDK's handler. No package imports: scripts/bench.sh copies it next to each server script, whose
// packages resolve from that install folder.

import { createServer } from 'node:http';

export const NAME_SCHEMA = {
    type: 'object',
    properties: { name: { type: 'string', description: 'Your name' } },
    required: ['name']
};

export function text(text) {
    return { content: [{ type: 'text', text }] };
}

// Serves `handle(req, res)` (a promise) at http://127.0.0.1:PORT/mcp, 404 elsewhere; a failure is
// logged and answered 500. `name` starts the line that says it listens.
export function serveMcp(name, port, handle) {
    const http = createServer((req, res) => {
        if (req.url !== '/mcp') {
            res.writeHead(404).end();
            return;
        }
        handle(req, res).catch(error => {
            console.error(error);
            if (!res.headersSent) res.writeHead(500);
            res.end();
        });
    });
    http.listen(port, '127.0.0.1', () => console.error(`${name}: listening on http://127.0.0.1:${port}/mcp`));
}
