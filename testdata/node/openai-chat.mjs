// The official openai npm client against agentrt's OpenAI-compatible
// endpoints (server/openai/node_test.go runs it): prints one JSON object
// with what each call came to, for the Go test to check.
import OpenAI from 'openai';

const [base] = process.argv.slice(2);
const client = new OpenAI({ baseURL: base + '/v1', apiKey: 'unused', maxRetries: 0 });
const out = {};

const models = await client.models.list();
out.models = models.data.map((m) => m.id);
out.created = [...new Set(models.data.map((m) => m.created))];

// Not streamed, with the raw response for the session header.
const { data: plain, response } = await client.chat.completions
  .create({ model: 'assistant', messages: [{ role: 'user', content: 'hello node' }] })
  .withResponse();
out.plain = { content: plain.choices[0].message.content, finish: plain.choices[0].finish_reason,
  total: plain.usage.total_tokens, session: response.headers.get('agentrt-session') !== null };

// Streamed, with the usage chunk.
const stream = await client.chat.completions.create({ model: 'assistant', stream: true,
  stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'stream me' }] });
let text = '';
let finish = null;
let usage = null;
for await (const chunk of stream) {
  if (chunk.choices.length === 0) usage = chunk.usage.total_tokens;
  for (const c of chunk.choices) {
    text += c.delta.content ?? '';
    finish = c.finish_reason ?? finish;
  }
}
out.streamed = { content: text, finish, usage };

// The stream() helper, which checks finish_reason when it assembles the
// completion.
const helper = client.chat.completions.stream({ model: 'assistant',
  messages: [{ role: 'user', content: 'help me' }] });
const deltas = [];
helper.on('content', (delta) => deltas.push(delta));
const final = await helper.finalChatCompletion();
out.helper = { content: final.choices[0].message.content, finish: final.choices[0].finish_reason, deltas: deltas.length };

// A run that waits for an approval, answered by the next message.
const { data: asked, response: r2 } = await client.chat.completions
  .create({ model: 'assistant', messages: [{ role: 'user', content: 'call deploy {"env":"prod"}' }] })
  .withResponse();
const session = r2.headers.get('agentrt-session');
const answered = await client.chat.completions.create(
  { model: 'assistant', messages: [{ role: 'user', content: 'approve' }] },
  { headers: { 'Agentrt-Session': session } });
out.approval = { asked: asked.choices[0].message.content.startsWith('Allow deploy'),
  kind: asked.agentrt.requests[0].kind, answer: answered.choices[0].message.content };

// A client-side tool: the chat.completions.stream() helper assembles the
// call (finish_reason tool_calls); the client runs it and sends the whole
// history back with the tool message; the agent answers with its result.
const tools = [{ type: 'function', function: { name: 'local_time', description: 'the local time',
  parameters: { type: 'object', properties: { tz: { type: 'string' } } } } }];
const history = [{ role: 'user', content: 'call local_time {"tz":"UTC"}' }];
const called = await client.chat.completions.stream({ model: 'assistant', messages: history, tools }).finalChatCompletion();
const toolCall = called.choices[0].message.tool_calls[0];
history.push(called.choices[0].message, { role: 'tool', tool_call_id: toolCall.id, content: '12:00 UTC' });
const toolAnswer = await client.chat.completions.create({ model: 'assistant', messages: history, tools });
out.clientTool = { finish: called.choices[0].finish_reason, name: toolCall.function.name, args: toolCall.function.arguments,
  answer: toolAnswer.choices[0].message.content, answerFinish: toolAnswer.choices[0].finish_reason };

// An image, as the client types a content part: a data: URL; a file_id
// (OpenAI's Files API, which this server does not keep) is an APIError.
const png = Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), Buffer.alloc(64)]).toString('base64');
const { data: seen, response: r3 } = await client.chat.completions.create({ model: 'assistant', messages: [{ role: 'user', content: [
  { type: 'text', text: 'what is this?' },
  { type: 'image_url', image_url: { url: `data:image/png;base64,${png}` } }] }] }).withResponse();
out.image = { answer: seen.choices[0].message.content, session: r3.headers.get('agentrt-session') };
try {
  await client.chat.completions.create({ model: 'assistant', messages: [{ role: 'user', content: [
    { type: 'file', file: { file_id: 'file-abc' } }] }] });
  out.image.fileId = 'no error';
} catch (e) {
  out.image.fileId = { isAPIError: e instanceof OpenAI.APIError, status: e.status, code: e.code, param: e.param };
}

// An unknown model is an APIError in OpenAI's shape.
try {
  await client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] });
  out.unknown = 'no error';
} catch (e) {
  out.unknown = { isAPIError: e instanceof OpenAI.APIError, status: e.status, code: e.code, param: e.param };
}

// A method the endpoint does not take is a 405 in OpenAI's shape too,
// which the client raises as its APIError with the code and type.
try {
  await client.post('/models', { body: {} });
  out.method = 'no error';
} catch (e) {
  out.method = { isAPIError: e instanceof OpenAI.APIError, status: e.status, code: e.code, type: e.type,
    param: e.param ?? null, message: typeof e.error?.message === 'string' };
}

console.log(JSON.stringify(out));
