// Drives an agent of agentrt serve over A2A with the official JavaScript
// SDK's client (@a2a-js/sdk): card, send, stream, get, an approval
// answered on its task, subscribe and cancel. server/a2a's Node test runs
// it and checks what it prints.
//
//   node a2a-client.mjs AGENT_URL
//
// AGENT_URL is the agent's A2A endpoint (http://127.0.0.1:PORT/v1/a2a/NAME),
// without a trailing slash; its card is at AGENT_URL/.well-known/agent-card.json. It prints one JSON
// object with what each step saw, and exits 1 on an error.

import { randomUUID } from 'node:crypto'
import { ClientFactory } from '@a2a-js/sdk/client'
import { Role, TaskState } from '@a2a-js/sdk'

const [agentUrl] = process.argv.slice(2)
if (!agentUrl) {
  console.error('usage: node a2a-client.mjs AGENT_URL')
  process.exit(2)
}

const state = (s) => TaskState[s?.state] ?? String(s?.state)
const textOf = (parts) => (parts ?? []).map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('')
const artifactText = (task) => (task.artifacts ?? []).map((a) => textOf(a.parts)).join('')

function message(text, { taskId = '', contextId = '' } = {}) {
  return {
    messageId: randomUUID(),
    contextId,
    taskId,
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  }
}

const send = (msg, configuration) => ({ tenant: '', message: msg, configuration, metadata: undefined })

// The agent's URL as given, without a trailing slash: the SDK resolves
// the card's path against it as a relative URL, which drops the agent's
// name (/v1/a2a/.well-known/agent-card.json), where a server of one agent
// serves that agent's card.
const client = await new ClientFactory().createFromUrl(agentUrl)
const out = {}

// Card.
const card = await client.getAgentCard()
out.card = { name: card.name, streaming: card.capabilities?.streaming ?? false, skills: card.skills.map((s) => s.name) }

// Send, then get.
const sent = await client.sendMessage(send(message('hello from node')))
out.send = { kind: sent.kind ?? ('status' in sent ? 'task' : 'message'), state: state(sent.status), text: artifactText(sent) }
const got = await client.getTask({ tenant: '', id: sent.id })
out.get = { state: state(got.status), text: artifactText(got), context: got.contextId === sent.contextId }

// A second turn in the same context.
const again = await client.sendMessage(send(message('and again', { contextId: sent.contextId })))
out.again = { state: state(again.status), text: artifactText(again), sameContext: again.contextId === sent.contextId }

// Stream.
out.stream = []
let streamed = ''
let final = ''
for await (const ev of client.sendMessageStream(send(message('one two three')))) {
  const p = ev.payload ?? ev
  switch (p.$case) {
    case 'task':
      out.stream.push('task:' + state(p.value.status))
      break
    case 'statusUpdate':
      out.stream.push('status:' + state(p.value.status))
      break
    case 'artifactUpdate':
      if (p.value.lastChunk) {
        out.stream.push('final')
        final = textOf(p.value.artifact.parts)
      } else {
        if (out.stream.at(-1) !== 'chunk') out.stream.push('chunk')
        streamed += textOf(p.value.artifact.parts)
      }
      break
    default:
      out.stream.push('other:' + p.$case)
  }
}
out.streamed = streamed
out.final = final

// An approval, answered on the task.
const asked = await client.sendMessage(send(message('call deploy {"env":"staging"}')))
out.approval = { asked: state(asked.status), question: textOf(asked.status?.message?.parts) }
const answered = await client.sendMessage(send(message('approve', { taskId: asked.id, contextId: asked.contextId })))
out.approval.answered = state(answered.status)
out.approval.sameTask = answered.id === asked.id
out.approval.text = artifactText(answered)

// Subscribe to a running task, then cancel it.
const running = await client.sendMessage(send(message('call gate {}'), {
  acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: true,
}))
out.cancel = {}
let canceled = false
for await (const ev of client.resubscribeTask({ tenant: '', id: running.id })) {
  const p = ev.payload ?? ev
  if (p.$case === 'task') out.cancel.first = 'task:' + state(p.value.status)
  // WORKING updates (the tool call) may come first; the last is the end.
  if (p.$case === 'statusUpdate') out.cancel.last = state(p.value.status)
  if (!canceled) {
    canceled = true
    const c = await client.cancelTask({ tenant: '', id: running.id, metadata: undefined })
    out.cancel.cancelTask = state(c.status)
  }
}
out.cancel.get = state((await client.getTask({ tenant: '', id: running.id })).status)

process.stdout.write(JSON.stringify(out) + '\n')
