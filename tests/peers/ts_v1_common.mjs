// What the TypeScript SDK v1 client scripts share (ts_v1_client.mjs, ts_v1_session.mjs): the SDK
// (@modelcontextprotocol/sdk, pinned by scripts/install-peers.sh), loaded from TS_V1_MODULES
// (.tools/peers/ts-v1/node_modules) whichever folder imports it; the events, one JSON line each on
// stdout; and the transport the command line names, with the version the client negotiates.
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(path.resolve(process.env.TS_V1_MODULES ?? '.', 'x.js'));
const sdk = (p) => import(require.resolve(`@modelcontextprotocol/sdk/${p}`));
export const { Client } = await sdk('client/index.js');
const { StreamableHTTPClientTransport } = await sdk('client/streamableHttp.js');
const { StdioClientTransport } = await sdk('client/stdio.js');
export const { ElicitRequestSchema, ElicitationCompleteNotificationSchema } = await sdk('types.js');

export const emit = (event) => process.stdout.write(JSON.stringify(event) + '\n');

// The `error` event for `error`, with `fields` (the call it ended, say) before its code and message.
export const failure = (error, fields = {}) =>
  ({ event: 'error', ...fields, code: error.code ?? null, message: String(error.message ?? error) });

// Each pushed notifications/elicitation/complete as a `complete` event. Returns
// `awaitCompletions(ids, ms)`, which waits (at most `ms`) until each of `ids` was completed: on HTTP
// the completion comes on the session's GET stream and the call's result on the call's own, and
// nothing orders two streams, so a script that closes the session as soon as the result arrives
// may close it before the completion is read.
export function reportCompletions(client) {
  const completed = new Set();
  let wake = () => {};
  client.setNotificationHandler(ElicitationCompleteNotificationSchema, async (notification) => {
    completed.add(notification.params.elicitationId);
    emit({ event: 'complete', elicitationId: notification.params.elicitationId });
    wake();
  });
  return async (ids, ms) => {
    const deadline = Date.now() + ms;
    while ([...ids].some((id) => !completed.has(id)) && Date.now() < deadline) {
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, deadline - Date.now());
        // Woken, the timer goes too: a pending one would keep the process alive until it fires.
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  };
}

// The transport of `how` (`--http` with [URL], else `--stdio` with [COMMAND, ARGS...]: the server
// started as the SDK's child process). `negotiated()` is the protocol version the client agreed
// on: the client hands it to the transport (HTTP headers need it), where it is caught. `close()`
// ends an HTTP session, then closes the client; neither failing is reported.
export function connection(client, how, target) {
  const transport = how === '--http'
    ? new StreamableHTTPClientTransport(new URL(target[0]))
    : new StdioClientTransport({ command: target[0], args: target.slice(1), env: process.env, stderr: 'inherit' });
  let negotiated = null;
  const setProtocolVersion = transport.setProtocolVersion?.bind(transport);
  transport.setProtocolVersion = (version) => {
    negotiated = version;
    setProtocolVersion?.(version);
  };
  return {
    transport,
    negotiated: () => negotiated,
    close: async () => {
      if (how === '--http') await transport.terminateSession().catch(() => {});
      await client.close().catch(() => {});
    },
  };
}
