// Drives travel-server's `book_trip` from the official TypeScript SDK v1 client
// (@modelcontextprotocol/sdk, pinned by scripts/install-peers.sh), as a 2025-era host does:
// `initialize`, then the server pushes elicitation requests while the call is open.
//
// Usage: node ts_v1_client.mjs PLAN (--http URL | --stdio COMMAND [ARGS...])
//   PLAN is JSON: {"caps": "form+url" | "form", "trip": {...} | "decline" | "cancel",
//                  "payment": "accept" | "decline" | "cancel", "confirm": true | false,
//                  "tool": NAME (default "book_trip"), "arguments": {...} (default {}),
//                  "awaitCompletions": true | false (default false)}
//   A form is answered with `trip` as its content (or declined/cancelled), a confirmation form
//   with `confirm`; so any server's form tools can be driven, not only travel-server's. With
//   `awaitCompletions`, the client waits (up to 30 s) after the call's end for the completion of
//   every URL step it accepted before it closes the session: the completion comes on the session's
//   GET stream, the result on the call's, and either may come first.
// Every event is one JSON line on stdout, for the test to read and act on:
//   {"event":"form","message":...}                  a form was pushed (answered from PLAN)
//   {"event":"url","url":...,"elicitationId":...}   a URL step was pushed; the test opens the page
//   {"event":"complete","elicitationId":...}        notifications/elicitation/complete arrived
//   {"event":"result","result":...} | {"event":"error","code":...,"message":...}  the call's end
// The SDK is loaded from TS_V1_MODULES (.tools/peers/ts-v1/node_modules), by ts_v1_common.mjs.
import { Client, ElicitRequestSchema, connection, emit, failure, reportCompletions } from './ts_v1_common.mjs';

const [planText, how, ...target] = process.argv.slice(2);
const plan = JSON.parse(planText);

const elicitation = plan.caps === 'form' ? {} : { form: {}, url: {} };
const accepted = new Set();
const client = new Client({ name: 'elicit-ts-v1-peer', version: '1.0.0' }, { capabilities: { elicitation } });

client.setRequestHandler(ElicitRequestSchema, async (request) => {
  const params = request.params;
  if (params.mode === 'url') {
    emit({ event: 'url', url: params.url, elicitationId: params.elicitationId, message: params.message });
    if (plan.payment === 'accept') accepted.add(params.elicitationId);
    return { action: plan.payment };
  }
  emit({ event: 'form', message: params.message, properties: Object.keys(params.requestedSchema.properties) });
  if ('confirm' in params.requestedSchema.properties) {
    return { action: 'accept', content: { confirm: plan.confirm } };
  }
  if (plan.trip === 'decline' || plan.trip === 'cancel') return { action: plan.trip };
  return { action: 'accept', content: plan.trip };
});
const awaitCompletions = reportCompletions(client);

const { transport, negotiated, close } = connection(client, how, target);
try {
  await client.connect(transport);
  emit({ event: 'connected', protocolVersion: negotiated(), sessionId: transport.sessionId ?? null });
  // A person takes their time: no request timeout shorter than the test's own bound.
  const call = { name: plan.tool ?? 'book_trip', arguments: plan.arguments ?? {} };
  const result = await client.callTool(call, undefined, { timeout: 120000 });
  emit({ event: 'result', result });
  if (plan.awaitCompletions) await awaitCompletions(accepted, 30000);
} catch (error) {
  emit(failure(error));
} finally {
  await close();
}
