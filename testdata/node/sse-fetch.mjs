// Follows a session's event stream with Node's own fetch (Node 20, no
// library), reading the response body as it streams and parsing the
// server-sent events by hand; when the stream ends or the server cannot
// be reached, it waits the server's retry delay and reconnects with
// Last-Event-ID, as EventSource would.
//
//   node sse-fetch.mjs URL RUNS
//
// Same arguments and output as sse-resume.mjs.

const [url, runsArg] = process.argv.slice(2)
const runs = Number(runsArg)
if (!url || !(runs > 0)) {
  console.error('usage: node sse-fetch.mjs URL RUNS')
  process.exit(2)
}

const print = (o) => process.stdout.write(JSON.stringify(o) + '\n')
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
let lastEventId = ''
let retry = 3000
let finished = 0

// dispatch handles one event block; it returns true when the script is done.
function dispatch(block) {
  let id = null
  let type = 'message'
  const data = []
  for (const line of block.split('\n')) {
    if (line === '' || line.startsWith(':')) continue
    const i = line.indexOf(':')
    const field = i < 0 ? line : line.slice(0, i)
    let value = i < 0 ? '' : line.slice(i + 1)
    if (value.startsWith(' ')) value = value.slice(1)
    if (field === 'id') id = value
    else if (field === 'event') type = value
    else if (field === 'data') data.push(value)
    else if (field === 'retry' && /^\d+$/.test(value)) retry = Number(value)
  }
  if (id !== null) lastEventId = id
  if (data.length === 0) return false
  if (type === 'reconnect') {
    print({ kind: 'reconnect', last: JSON.parse(data.join('\n')).last_event_id })
    return false
  }
  if (type === 'stream_error') {
    print({ kind: 'stream_error', message: data.join('\n') })
    return false
  }
  print({ kind: 'event', type, id: id ?? '' })
  return type === 'run_finished' && ++finished === runs
}

async function follow() {
  const headers = { Accept: 'text/event-stream' }
  if (lastEventId !== '') headers['Last-Event-ID'] = lastEventId
  const res = await fetch(url, { headers })
  if (res.status !== 200 || !(res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
    throw new Error(`not an event stream: ${res.status} ${await res.text()}`)
  }
  print({ kind: 'open' })
  const decoder = new TextDecoder()
  let buf = ''
  for await (const chunk of res.body) {
    buf += decoder.decode(chunk, { stream: true }).replace(/\r\n?/g, '\n')
    let end
    while ((end = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, end)
      buf = buf.slice(end + 2)
      if (dispatch(block)) return true
    }
  }
  return false
}

for (;;) {
  try {
    if (await follow()) break
    print({ kind: 'dropped', message: 'the stream ended' })
  } catch (err) {
    // A refused connection (the server restarting) is retried; a
    // response that is not a stream is not.
    if (String(err.message).startsWith('not an event stream')) {
      console.error(err.message)
      process.exit(1)
    }
    print({ kind: 'dropped', message: String(err.cause?.code ?? err.message) })
  }
  await sleep(retry)
}
