// Runs scenarios against agentrt's AG-UI endpoint with @ag-ui/client's
// HttpAgent, whose runAgent passes every event through the package's
// verifier (verifyEvents): an event out of order fails the run. Prints one
// JSON line per run: the event types, the outcome, the messages.
//
//   node agui-client.mjs BASE_URL SCENARIO
import { HttpAgent } from "@ag-ui/client";

const [base, scenario] = process.argv.slice(2);
const thread = `agui-${scenario}-${process.pid}`;

function agent() {
  return new HttpAgent({ url: `${base}/v1/agui/assistant`, threadId: thread });
}

async function run(a, params = {}, onEvent) {
  const types = [];
  let outcome = null, error = null;
  const sub = {
    onEvent: ({ event }) => { types.push(event.type); onEvent?.(event); },
    onRunFinishedEvent: (e) => {
      outcome = { outcome: e.outcome, result: e.result ?? null, interrupts: e.interrupts ?? null,
        pendingToolCallIds: e.pendingToolCallIds ?? null };
    },
    onRunErrorEvent: ({ event }) => { error = { message: event.message, code: event.code ?? null }; },
  };
  let thrown = null;
  try {
    await a.runAgent(params, sub);
  } catch (e) {
    thrown = String(e?.message ?? e);
  }
  const msgs = a.messages.map((m) => ({ role: m.role, content: typeof m.content === "string" ? m.content : null,
    toolCalls: (m.toolCalls ?? []).map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments })),
    toolCallId: m.toolCallId ?? null }));
  console.log(JSON.stringify({ types, outcome, error, thrown, messages: msgs, pending: a.pendingInterrupts ?? [] }));
  return { outcome, error, thrown };
}

function say(a, text) {
  a.addMessage({ id: `u-${Math.random().toString(36).slice(2)}`, role: "user", content: text });
}

const scenarios = {
  async plain() {
    const a = agent();
    say(a, "hello there");
    await run(a);
  },
  async tool() {
    const a = agent();
    say(a, 'call lookup {"q":"go"}');
    await run(a);
  },
  async failed() {
    const a = agent();
    say(a, "fail now");
    await run(a);
  },
  async canceled() {
    const a = agent();
    say(a, "stall");
    let asked = false;
    await run(a, {}, (e) => {
      // Cancel once the call is streaming: the run ends with it open.
      if (e.type === "TOOL_CALL_ARGS" && !asked) {
        asked = true;
        fetch(`${base}/v1/sessions/${thread}/cancel`, { method: "POST", headers: { "Content-Type": "application/json" }, body: "{}" })
          .then((r) => { if (!r.ok) console.error("cancel:", r.status); });
      }
    });
  },
  async interrupt() {
    const a = agent();
    say(a, 'call deploy {"env":"prod"}');
    const first = await run(a);
    const ints = first.outcome?.interrupts ?? [];
    await run(a, { resume: ints.map((i) => ({ interruptId: i.id, status: "resolved", payload: { approved: true } })) });
  },
  async frontend() {
    // A frontend tool: the run ends leaving its call for the application,
    // which runs it and sends the result as a tool message.
    const tools = [{ name: "local_time", description: "the time in the browser",
      parameters: { type: "object", properties: { tz: { type: "string" } } } }];
    const a = agent();
    say(a, 'call local_time {"tz":"UTC"}');
    const first = await run(a, { tools });
    for (const id of first.outcome?.pendingToolCallIds ?? []) {
      a.addMessage({ id: `t-${id}`, role: "tool", toolCallId: id, content: "12:00 UTC" });
    }
    await run(a, { tools });
  },
  async empty() {
    // A client joins a thread nobody has written to yet.
    await run(agent());
  },
  async reconnect() {
    const a = agent();
    say(a, "hello there");
    await run(a);
    // A new client on the same thread, with no history of its own.
    await run(agent());
  },
  async rejoinFailed() {
    const a = agent();
    say(a, "fail now");
    await run(a);
    await run(agent());
  },
};

const fn = scenarios[scenario];
if (!fn) {
  console.error(`unknown scenario ${scenario}`);
  process.exit(2);
}
await fn();
