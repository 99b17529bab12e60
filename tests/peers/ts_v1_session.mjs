// One session of the official TypeScript SDK v1 client (@modelcontextprotocol/sdk, pinned by
// scripts/install-peers.sh) that makes several tool calls in turn, as a 2025-era host does:
// `initialize`, then each call, during which the server pushes its elicitation requests. Over
// stdio (StdioClientTransport, the server started as the SDK's child process) or Streamable HTTP.
//
// Usage: node ts_v1_session.mjs CALLS (--stdio COMMAND [ARGS...] | --http URL)
//   CALLS is a JSON array, one member a call, made in order on the one session:
//     {"tool": NAME, "arguments": {...} (default {}),
//      "form": {...content...} | "decline" | "cancel"   how every pushed form is answered,
//      "url": "accept" | "decline" | "cancel"}          how every pushed URL request is answered
// Every event is one JSON line on stdout, tagged with the index of the call it belongs to:
//   {"event":"connected","protocolVersion":...}
//   {"event":"form","call":i,"message":...,"properties":[...]}        a form was pushed and answered
//   {"event":"url","call":i,"url":...,"elicitationId":...,"message":...}   a URL request; the test
//                                                                    acts as the browser on the page
//   {"event":"complete","elicitationId":...}                        notifications/elicitation/complete
//   {"event":"result","call":i,"result":...} | {"event":"error","call":i,"code":...,"message":...}
//   {"event":"closed"}                                              every call made, the session closed
// The SDK is loaded from TS_V1_MODULES (.tools/peers/ts-v1/node_modules), by ts_v1_common.mjs.
import { Client, ElicitRequestSchema, connection, emit, failure, reportCompletions } from './ts_v1_common.mjs';

const [callsText, how, ...target] = process.argv.slice(2);
const calls = JSON.parse(callsText);
if (!Array.isArray(calls) || (how !== '--stdio' && how !== '--http') || target.length === 0) {
  process.stderr.write('usage: node ts_v1_session.mjs CALLS (--stdio COMMAND [ARGS...] | --http URL)\n');
  process.exit(2);
}

const client = new Client(
  { name: 'elicit-ts-v1-session', version: '1.0.0' },
  { capabilities: { elicitation: { form: {}, url: {} } } },
);

// The call being made: pushed requests arrive while it is open.
let current = -1;
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  const params = request.params;
  const plan = calls[current] ?? {};
  if (params.mode === 'url') {
    emit({ event: 'url', call: current, url: params.url, elicitationId: params.elicitationId, message: params.message });
    return { action: plan.url ?? 'cancel' };
  }
  emit({
    event: 'form',
    call: current,
    message: params.message,
    properties: Object.keys(params.requestedSchema?.properties ?? {}),
  });
  if (plan.form === 'decline' || plan.form === 'cancel' || plan.form === undefined) {
    return { action: plan.form ?? 'cancel' };
  }
  return { action: 'accept', content: plan.form };
});
reportCompletions(client);

const { transport, negotiated, close } = connection(client, how, target);
let failed = false;
try {
  await client.connect(transport);
  emit({ event: 'connected', protocolVersion: negotiated() });
  for (const [index, call] of calls.entries()) {
    current = index;
    try {
      // A person takes their time: no request timeout shorter than the test's own bound.
      const result = await client.callTool({ name: call.tool, arguments: call.arguments ?? {} }, undefined, {
        timeout: 120000,
      });
      emit({ event: 'result', call: index, result });
    } catch (error) {
      emit(failure(error, { call: index }));
    }
  }
} catch (error) {
  failed = true;
  emit(failure(error, { call: current }));
} finally {
  await close();
  emit({ event: 'closed' });
}
process.exit(failed ? 1 : 0);
