// A task whose run pauses at its round limit (max_rounds), driven with
// the official JavaScript SDK's client (@a2a-js/sdk): the task asks for
// input rather than failing, and "continue" on the task resumes the run
// to its end. server/a2a's Node test runs it and checks what it prints.
//
//   node a2a-paused.mjs AGENT_URL
//
// AGENT_URL is the endpoint of an agent whose runs pause after one round
// (http://127.0.0.1:PORT/v1/a2a/NAME/, with its trailing slash: the
// server has several agents). It prints one JSON object, and exits 1 on
// an error.

import { randomUUID } from 'node:crypto'
import { ClientFactory } from '@a2a-js/sdk/client'
import { Role, TaskState } from '@a2a-js/sdk'

const [agentUrl] = process.argv.slice(2)
if (!agentUrl) {
  console.error('usage: node a2a-paused.mjs AGENT_URL')
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

const send = (msg) => ({ tenant: '', message: msg, configuration: undefined, metadata: undefined })

const client = await new ClientFactory().createFromUrl(agentUrl)
const paused = await client.sendMessage(send(message('call deploy {"env":"prod"}')))
const out = { paused: state(paused.status), says: textOf(paused.status?.message?.parts) }
const got = await client.getTask({ tenant: '', id: paused.id })
out.get = state(got.status)
const resumed = await client.sendMessage(send(message('continue', { taskId: paused.id, contextId: paused.contextId })))
out.resumed = state(resumed.status)
out.sameTask = resumed.id === paused.id
out.text = artifactText(resumed)

process.stdout.write(JSON.stringify(out) + '\n')
