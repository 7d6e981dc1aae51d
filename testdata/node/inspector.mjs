// A person's path through agentrt's inspector, in real Chromium driven by
// playwright-core (internal/cli/inspector_browser_test.go runs it against
// a real agentrt serve whose agent asks before each calculator call).
//
//   node inspector.mjs BASE_URL SCREENSHOT_DIR
//
// CHROMIUM is the browser's path. Each step prints a JSON line
// {"step": …}; a failure prints {"error": …} and exits 1.
import { chromium } from "playwright-core";
import { join } from "node:path";

const [base, shots, mode] = process.argv.slice(2);
const say = (o) => console.log(JSON.stringify(o));
const api = async (method, path, body) => {
  const r = await fetch(base + path, { method, headers: { "Content-Type": "application/json" }, body: body && JSON.stringify(body) });
  if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${await r.text()}`);
  return r.json();
};
const waitStatus = async (id, status) => {
  for (let i = 0; i < 300; i++) {
    const s = await api("GET", "/v1/sessions/" + id);
    if (s.status === status) return s;
    await new Promise((r) => setTimeout(r, 100)); // polls the API; orders nothing
  }
  throw new Error(`session ${id} never got to ${status}`);
};

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM, args: ["--no-sandbox", "--disable-gpu"] });
if (mode === "keys") {
  // With API keys (KEY_A of tenant acme, KEY_B of globex): the pages ask
  // for a key, a wrong one is refused, and a person sees their tenant's
  // sessions only.
  try {
    for (const [key, id] of [[process.env.KEY_A, "acme-1"], [process.env.KEY_B, "globex-1"]]) {
      const r = await fetch(base + "/v1/sessions", { method: "POST", headers: { "Content-Type": "application/json", Authorization: "Bearer " + key }, body: JSON.stringify({ id }) });
      if (r.status !== 201) throw new Error("create " + id + ": " + r.status);
    }
    const page = await (await browser.newContext({ viewport: { width: 1280, height: 700 } })).newPage();
    await page.goto(base + "/");
    if (!page.url().includes("/ui/login")) throw new Error("/ without a sign-in led to " + page.url());
    await page.getByLabel("API key").fill("not-a-key");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByText("not one of this server's API keys").waitFor();
    await page.screenshot({ path: join(shots, "login.png") });
    say({ step: "a wrong key is refused" });
    await page.getByLabel("API key").fill(process.env.KEY_A);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("link", { name: "acme-1" }).waitFor();
    if (await page.getByText("globex-1").count() !== 0) throw new Error("acme sees globex's session");
    say({ step: "signed in, sees only its tenant's sessions" });
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByLabel("API key").waitFor();
    say({ step: "signed out" });
  } catch (e) {
    say({ error: String(e && e.stack || e) });
    process.exitCode = 1;
  } finally {
    await browser.close();
  }
  process.exit();
}
try {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await ctx.newPage();
  const consoleErrors = [];
  page.on("console", (m) => { if (m.type() === "error") consoleErrors.push(m.text()); });
  page.on("pageerror", (e) => consoleErrors.push(String(e)));

  // Open /, and see a session appear without reloading.
  await page.goto(base + "/");
  if (!page.url().endsWith("/ui/")) throw new Error("/ led to " + page.url());
  await api("POST", "/v1/sessions", { id: "tour" });
  await api("POST", "/v1/sessions/tour/messages", { text: "what is 6*7?" });
  await waitStatus("tour", "waiting");
  await page.getByRole("link", { name: "tour" }).waitFor({ timeout: 15000 });
  await page.screenshot({ path: join(shots, "sessions.png"), fullPage: true });
  say({ step: "a session appeared live" });

  // The session: its timeline and the request it waits on.
  await page.getByRole("link", { name: "tour" }).click();
  await page.getByRole("heading", { name: "Waiting for a person" }).waitFor();
  await page.getByText("model replied").first().waitFor();
  await page.screenshot({ path: join(shots, "session-waiting.png"), fullPage: true });
  say({ step: "the session shows its timeline and its request" });

  // Arguments that are not JSON: the page says so, and sends nothing.
  await page.getByText("Edit arguments").click();
  const args = page.getByLabel("Arguments (JSON)");
  await args.fill('{"expression":');
  const msg = await args.evaluate((el) => el.validationMessage);
  if (!msg.includes("not JSON")) throw new Error("invalid arguments: validation message " + JSON.stringify(msg));
  await page.getByRole("button", { name: "Approve edited JSON" }).click();
  if ((await waitStatusNow("tour")) !== "waiting") throw new Error("invalid arguments were sent");
  say({ step: "invalid arguments are refused in the page" });

  // The inbox, then Approve: the run finishes, and the session's page
  // follows it live.
  await page.getByRole("link", { name: "Inbox" }).click();
  await page.getByRole("button", { name: "Approve", exact: true }).waitFor();
  await page.screenshot({ path: join(shots, "inbox.png"), fullPage: true });
  await page.getByRole("button", { name: "Approve", exact: true }).click();
  await page.getByText("Nothing waits for a person.").waitFor();
  say({ step: "approved from the inbox" });
  // A request that comes while the inbox is open appears without a reload.
  await api("POST", "/v1/sessions", { id: "tour2" });
  await api("POST", "/v1/sessions/tour2/messages", { text: "what is 6*7?" });
  await page.getByRole("button", { name: "Approve", exact: true }).waitFor({ timeout: 15000 });
  say({ step: "a new request appeared in the open inbox" });
  await page.goto(base + "/ui/sessions/tour");
  await page.getByText("run done").waitFor({ timeout: 15000 });
  const answer = await page.locator("li.ev.final pre.body").first().textContent();
  if (!answer.includes("42")) throw new Error("the answer: " + JSON.stringify(answer));
  await page.screenshot({ path: join(shots, "session-done.png"), fullPage: true });
  say({ step: "the run finished after the approval" });

  // Watch a turn stream into an open page: a second message, sent while
  // the page is open, appears without a reload.
  await api("POST", "/v1/sessions/tour/messages", { text: "hello" });
  await page.getByText("You said: hello").first().waitFor({ timeout: 15000 });
  say({ step: "a turn streamed into the open page" });

  // What the first model call was sent: the page shows the body; the Go
  // test compares it with what the model server recorded.
  await page.goto(base + "/ui/sessions/tour");
  await page.getByRole("link", { name: "what the model was sent" }).first().click();
  await page.getByRole("heading", { name: "What the model was sent" }).waitFor();
  const wire = await page.locator("details[open] pre").textContent();
  await page.screenshot({ path: join(shots, "sent.png"), fullPage: true });
  say({ step: "what the model was sent", wire });

  // Fork at the first model call, take the fork another way, compare.
  await page.goto(base + "/ui/sessions/tour");
  await page.getByLabel("Fork at event").fill("3");
  await page.getByRole("button", { name: "Fork" }).click();
  await page.getByText("Forked from").waitFor();
  await page.getByLabel("Message").fill("what is 2+2?");
  await page.getByRole("button", { name: "Send" }).click();
  await page.getByRole("heading", { name: "Waiting for a person" }).waitFor({ timeout: 15000 });
  await page.getByRole("link", { name: "compare the two" }).click();
  await page.getByText("first difference").first().waitFor();
  await page.screenshot({ path: join(shots, "diff.png"), fullPage: true });
  say({ step: "forked, sent another way, compared" });

  // Cancel the fork's run, waiting for its approval.
  await page.goBack();
  await page.getByRole("button", { name: "Cancel" }).click();
  await page.locator("#status", { hasText: "canceled" }).waitFor({ timeout: 15000 });
  say({ step: "canceled a run" });

  // A narrow phone screen shows the same page.
  const phone = await browser.newContext({ viewport: { width: 390, height: 844 } });
  const pp = await phone.newPage();
  await pp.goto(base + "/ui/");
  await pp.screenshot({ path: join(shots, "sessions-phone.png"), fullPage: true });
  await phone.close();

  // A page of another origin posts a form to the inspector: refused.
  const evil = await ctx.newPage();
  await evil.setContent(`<form method="post" action="${base}/ui/sessions/tour/cancel"><input name="csrf" value="x"><button>go</button></form>`);
  const [resp] = await Promise.all([evil.waitForResponse((r) => r.url().includes("/cancel")), evil.getByRole("button", { name: "go" }).click()]);
  if (resp.status() !== 403) throw new Error("a foreign page's form: " + resp.status());
  say({ step: "a foreign page's form is refused", status: resp.status() });

  if (consoleErrors.length) throw new Error("console errors: " + consoleErrors.join("; "));
} catch (e) {
  say({ error: String(e && e.stack || e) });
  process.exitCode = 1;
} finally {
  await browser.close();
}

async function waitStatusNow(id) {
  return (await api("GET", "/v1/sessions/" + id)).status;
}
