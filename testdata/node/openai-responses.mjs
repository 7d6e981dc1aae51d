// The official openai npm client against agentrt's Responses API
// (server/openai/node_test.go runs it): prints one JSON object with what
// each call came to, for the Go test to check.
import OpenAI from 'openai';

const [base] = process.argv.slice(2);
const client = new OpenAI({ baseURL: base + '/v1', apiKey: 'unused', maxRetries: 0 });
const out = {};
const apiError = async (call) => {
  try {
    await call();
    return 'no error';
  } catch (e) {
    return { isAPIError: e instanceof OpenAI.APIError, status: e.status, code: e.code, param: e.param ?? null };
  }
};
const deltaText = (events) => events.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta).join('');

// Not streamed, then continued with previous_response_id.
const first = await client.responses.create({ model: 'assistant', input: 'hello node' });
const second = await client.responses.create({ model: 'assistant', input: 'again', previous_response_id: first.id });
const got = await client.responses.retrieve(second.id);
out.plain = { status: first.status, text: first.output_text, total: first.usage.total_tokens, next: second.output_text,
  previous: got.previous_response_id === first.id, model: got.model, background: got.background };

// The stream() helper: a delta a token, assembled into the final response.
const helper = client.responses.stream({ model: 'assistant', input: 'help me' });
const deltas = [];
helper.on('response.output_text.delta', (e) => deltas.push(e.delta));
const final = await helper.finalResponse();
out.helper = { text: final.output_text, status: final.status, deltas };

// A stream left after its second token, resumed with starting_after: the
// rest of the text. The stream() helper's resume reads the whole stream
// again and skips the events numbered up to starting_after itself: read
// from the log, the message's text is one delta, which it keeps whole.
const live = [];
for await (const e of await client.responses.create({ model: 'assistant', input: 'leave me half way', stream: true })) {
  live.push(e);
  if (live.filter((x) => x.type === 'response.output_text.delta').length === 2) break;
}
const left = live[live.length - 1].sequence_number;
const rest = [];
for await (const e of await client.responses.retrieve(live[0].response.id, { stream: true, starting_after: left })) rest.push(e);
const again = client.responses.stream({ response_id: live[0].response.id, starting_after: left });
const againDeltas = [];
again.on('response.output_text.delta', (e) => againDeltas.push(e.delta));
const againFinal = await again.finalResponse();
out.resume = { had: deltaText(live), rest: deltaText(rest), after: rest.every((e) => e.sequence_number > left),
  last: rest[rest.length - 1].type, helperDeltas: againDeltas, helperText: againFinal.output_text };

// In the background: answered at once, then followed to its end, polled,
// and its stream resumed after sequence number 3.
const bg = await client.responses.create({ model: 'assistant', input: 'later', background: true });
const full = [];
for await (const e of await client.responses.retrieve(bg.id, { stream: true })) full.push(e);
const polled = await client.responses.retrieve(bg.id);
const resumed = [];
for await (const e of await client.responses.retrieve(bg.id, { stream: true, starting_after: 3 })) resumed.push(e);
out.background = { queued: bg.status, polled: polled.status, text: polled.output_text, background: polled.background,
  last: full[full.length - 1].type, followed: deltaText(full), resumed: deltaText(resumed) };

// A function tool of the client's: the call comes back as a function_call
// item, its output continues the run; streamed, the helper assembles it.
const tools = [{ type: 'function', name: 'local_time', description: 'the time here', strict: false,
  parameters: { type: 'object', properties: { tz: { type: 'string' } } } }];
const asked = await client.responses.create({ model: 'assistant', input: 'call local_time {"tz":"UTC"}', tools });
const call = asked.output.find((o) => o.type === 'function_call');
const answered = await client.responses.create({ model: 'assistant', previous_response_id: asked.id,
  input: [{ type: 'function_call_output', call_id: call.call_id, output: '12:00 UTC' }] });
const streamedCall = await client.responses.stream({ model: 'assistant', input: 'call local_time {"tz":"CET"}', tools }).finalResponse();
const call2 = streamedCall.output.find((o) => o.type === 'function_call');
out.functionCall = { status: asked.status, name: call.name, args: call.arguments, callStatus: call.status,
  tools: asked.tools.map((t) => t.name), answer: answered.output_text, streamedArgs: call2.arguments, streamedStatus: streamedCall.status };

// Cancel a background response while its model streams.
const slow = await client.responses.create({ model: 'slow', input: 'count', background: true });
const following = await client.responses.retrieve(slow.id, { stream: true });
for await (const e of following) if (e.type === 'response.in_progress') break;
const cancelled = await client.responses.cancel(slow.id);
const afterCancel = await client.responses.retrieve(slow.id);
out.cancel = { status: cancelled.status, polled: afterCancel.status, again: (await client.responses.cancel(slow.id)).status };

// Delete: a response alone in its session goes with it.
const lone = await client.responses.create({ model: 'assistant', input: 'forget me' });
await client.responses.delete(lone.id);
out.delete = { gone: await apiError(() => client.responses.retrieve(lone.id)),
  shared: await apiError(() => client.responses.delete(first.id)) };

// Errors in OpenAI's shape.
out.errors = {
  unknownResponse: await apiError(() => client.responses.retrieve('resp_nothing')),
  unknownPrevious: await apiError(() => client.responses.create({ model: 'assistant', input: 'x',
    previous_response_id: 'resp_' + Buffer.from('no-such-session\x000\x00in_1\x000\x00').toString('base64url') })),
  unknownCall: await apiError(() => client.responses.create({ model: 'assistant', previous_response_id: answered.id,
    input: [{ type: 'function_call_output', call_id: 'call_nobody', output: 'x' }] })),
  webSearch: await apiError(() => client.responses.create({ model: 'assistant', input: 'x', tools: [{ type: 'web_search' }] })),
};

console.log(JSON.stringify(out));
