// The official openai npm client against agentrt's Responses API
// (server/openai/node_test.go runs it): prints one JSON object with what
// each call came to, for the Go test to check.
import OpenAI from 'openai';

const [base] = process.argv.slice(2);
const client = new OpenAI({ baseURL: base + '/v1', apiKey: 'unused', maxRetries: 0 });
const out = {};

// Not streamed, then continued with previous_response_id.
const first = await client.responses.create({ model: 'assistant', input: 'hello node' });
const second = await client.responses.create({ model: 'assistant', input: 'again', previous_response_id: first.id });
out.plain = { status: first.status, text: first.output_text, total: first.usage.total_tokens, next: second.output_text };

// The stream() helper assembles the final response from the events.
const helper = client.responses.stream({ model: 'assistant', input: 'help me' });
const deltas = [];
helper.on('response.output_text.delta', (e) => deltas.push(e.delta));
const final = await helper.finalResponse();
out.helper = { text: final.output_text, status: final.status, deltas: deltas.join('') };

// In the background: answered at once, then followed to its end, polled,
// and its stream resumed after sequence number 3.
const bg = await client.responses.create({ model: 'assistant', input: 'later', background: true });
const full = [];
for await (const e of await client.responses.retrieve(bg.id, { stream: true })) full.push(e);
const polled = await client.responses.retrieve(bg.id);
const rest = [];
for await (const e of await client.responses.retrieve(bg.id, { stream: true, starting_after: 3 })) rest.push(e);
out.background = { queued: bg.status, polled: polled.status, text: polled.output_text,
  last: full[full.length - 1].type, resumedFrom: rest[0].sequence_number, resumed: rest.length === full.length - 4 };

// A response id no one has is an APIError in OpenAI's shape.
try {
  await client.responses.retrieve('resp_nothing');
  out.unknown = 'no error';
} catch (e) {
  out.unknown = { isAPIError: e instanceof OpenAI.APIError, status: e.status, code: e.code };
}

console.log(JSON.stringify(out));
