// Follows a session's event stream the way a browser page does, with the
// W3C EventSource (the `eventsource` package): it subscribes to the
// event types by name, and when the server drops the stream (a reconnect
// event, a restart, a refused connection) EventSource reconnects by
// itself after the server's retry delay, sending Last-Event-ID.
//
//   node sse-resume.mjs URL RUNS
//
// URL is GET /v1/sessions/{id}/events. It ends once it has seen RUNS
// run_finished events. On stdout, one JSON object a line:
//   {"kind":"open"}                        a connection is open
//   {"kind":"event","type":T,"id":"N"}     an event ("id" is "" for a live one)
//   {"kind":"reconnect","last":N}          the server asked it to reconnect
//   {"kind":"stream_error","message":M}    the stream failed (M: the error body)
//   {"kind":"dropped","message":M}         the connection broke; EventSource retries
import { EventSource } from 'eventsource'

const [url, runsArg] = process.argv.slice(2)
const runs = Number(runsArg)
if (!url || !(runs > 0)) {
  console.error('usage: node sse-resume.mjs URL RUNS')
  process.exit(2)
}

// Every SSE event of agentrt is named after its type (docs/events.md), so
// `onmessage` sees none of them: a page listens to each type it shows.
const types = [
  'messages_imported', 'run_started', 'run_resumed', 'round_started', 'model_started', 'token',
  'tool_call_delta', 'model_finished', 'tool_call', 'tool_result', 'input_required', 'input_resolved',
  'rule_added', 'rule_revoked', 'input_steered', 'control', 'interrupted', 'plan_created',
  'plan_step_started', 'plan_step_finished', 'subagent_started', 'subagent_progress',
  'subagent_checkpoint', 'subagent_paused', 'subagent_finished', 'subagent_error', 'subagent_event',
  'compaction', 'loop_warning', 'final', 'run_finished',
]

const print = (o) => process.stdout.write(JSON.stringify(o) + '\n')
const es = new EventSource(url)
// EventSource unrefs its reconnect timer: without something else pending,
// Node would exit while it waits to reconnect.
const keepAlive = setInterval(() => {}, 1 << 30)
let finished = 0

const onEvent = (type) => (ev) => {
  const data = JSON.parse(ev.data)
  // lastEventId carries over to events without an id of their own (live
  // tokens): the event's seq says whether it had one.
  print({ kind: 'event', type, id: data.seq ? ev.lastEventId : '' })
  if (type === 'run_finished' && ++finished === runs) {
    es.close()
    clearInterval(keepAlive)
  }
}
for (const type of types) es.addEventListener(type, onEvent(type))

es.addEventListener('open', () => print({ kind: 'open' }))
es.addEventListener('stream_error', (ev) => print({ kind: 'stream_error', message: ev.data }))
es.addEventListener('reconnect', (ev) => print({ kind: 'reconnect', last: JSON.parse(ev.data).last_event_id }))
// The name "error" is both EventSource's own (the connection broke) and
// that of a session's error events: a MessageEvent carries data, a broken
// connection does not.
es.addEventListener('error', (ev) => {
  if (typeof ev.data === 'string') {
    onEvent('error')(ev)
    return
  }
  print({ kind: 'dropped', message: ev.message ?? '' })
})
