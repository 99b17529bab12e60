// The official TypeScript SDK v1 client set up as hosts set it up for a person who takes their
// time: `book_trip` called with a short request timeout that progress resets
// (`resetTimeoutOnProgress`), and, with "progress": true, an `onprogress` callback (which makes the
// SDK send a `progressToken`). The person waits three timeouts' worth of time before answering
// the pushed form, and as long again before consenting to the payment page; the test acts as the
// browser on the page once the person consented.
//
// Usage: node ts_v1_slow_person.mjs PLAN --http URL
//   PLAN: {"timeout": MS, "progress": true|false, "trip": {...}}
// Events, one JSON line each on stdout:
//   {"event":"connected","protocolVersion":...}
//   {"event":"form","message":...,"progressWhileWaiting":N}     the trip form, answered after the wait
//   {"event":"consented","url":...,"progressWhileWaiting":N}    the URL step, accepted after the wait
//   {"event":"confirm","message":...}                           the confirmation, answered at once
//   {"event":"complete","elicitationId":...}                    notifications/elicitation/complete
//   {"event":"result","result":...,"progress":N} | {"event":"error","code":...,"message":...,"progress":N}
//   {"event":"closed"}                                          the session closed
// After a result the client waits (up to 30 s) for the completion of the step it consented to
// before it closes: the completion comes on the session's GET stream, the result on the call's,
// and either may come first.
// The SDK is loaded from TS_V1_MODULES (.tools/peers/ts-v1/node_modules), by ts_v1_common.mjs.
import { Client, ElicitRequestSchema, connection, emit, failure, reportCompletions } from './ts_v1_common.mjs';

const [planText, how, ...target] = process.argv.slice(2);
const plan = JSON.parse(planText);
if (how !== '--http' || target.length === 0 || !(plan.timeout > 0)) {
  process.stderr.write('usage: node ts_v1_slow_person.mjs PLAN --http URL\n');
  process.exit(2);
}

const client = new Client(
  { name: 'elicit-ts-v1-slow-person', version: '1.0.0' },
  { capabilities: { elicitation: { form: {}, url: {} } } },
);

let progress = 0;
const consented = new Set();
let forms = 0;
// The person: three of the client's timeouts go by before they answer.
const slowly = async () => {
  const before = progress;
  await new Promise((resolve) => setTimeout(resolve, 3 * plan.timeout));
  return progress - before;
};

client.setRequestHandler(ElicitRequestSchema, async (request) => {
  const params = request.params;
  if (params.mode === 'url') {
    const progressWhileWaiting = await slowly();
    emit({ event: 'consented', url: params.url, elicitationId: params.elicitationId, progressWhileWaiting });
    consented.add(params.elicitationId);
    return { action: 'accept' };
  }
  forms += 1;
  if (forms === 1) {
    const progressWhileWaiting = await slowly();
    emit({ event: 'form', message: params.message, progressWhileWaiting });
    return { action: 'accept', content: plan.trip };
  }
  emit({ event: 'confirm', message: params.message });
  return { action: 'accept', content: { confirm: true } };
});
const awaitCompletions = reportCompletions(client);

const { transport, negotiated, close } = connection(client, how, target);
let failed = false;
try {
  await client.connect(transport);
  emit({ event: 'connected', protocolVersion: negotiated() });
  const options = { timeout: plan.timeout, resetTimeoutOnProgress: true };
  if (plan.progress) {
    options.onprogress = () => {
      progress += 1;
    };
  }
  try {
    const result = await client.callTool({ name: 'book_trip', arguments: {} }, undefined, options);
    emit({ event: 'result', result, progress });
    await awaitCompletions(consented, 30000);
  } catch (error) {
    emit(failure(error, { progress }));
  }
} catch (error) {
  failed = true;
  emit(failure(error));
} finally {
  await close();
  emit({ event: 'closed' });
}
process.exit(failed ? 1 : 0);
