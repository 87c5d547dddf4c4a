// Browser scenarios for the web UI, driven by Playwright (playwright-core) on Debian's Chromium.
//
//   node tests/web/e2e.mjs SCENARIO GATEWAY_URL ARTIFACTS_DIR
//
// Prints one JSON line {ok, scenario, checks, screenshots, error?} and exits 0 only when the scenario passed.
import { createRequire } from "node:module";
import { mkdirSync, readFileSync } from "node:fs";
import path from "node:path";

const require = createRequire(new URL("../../web/package.json", import.meta.url));
const { chromium } = require("playwright-core");

const [scenario, baseUrl, artifacts] = process.argv.slice(2);
const CHROMIUM = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
const ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run", "--disable-sync"];
const checks = {};
const screenshots = [];

function check(name, ok, detail) {
  checks[name] = detail === undefined ? !!ok : detail;
  if (!ok) throw new Error(`check failed: ${name}${detail === undefined ? "" : ` (${JSON.stringify(detail)})`}`);
}

async function shot(page, name) {
  const file = path.join(artifacts, `${scenario}-${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  screenshots.push(file);
}

async function send(page, text) {
  await page.getByTestId("send").waitFor(); // not while a run is still finishing
  await page.getByTestId("input").fill(text);
  await page.getByTestId("input").press("Enter");
}

const lastAgent = (page) => page.getByTestId("message-agent").last();

/** Reads the header's activity badge every 150 ms until the run ends, into ``samples``. */
async function watchRun(page, samples) {
  const badge = page.getByTestId("running");
  await badge.waitFor({ timeout: 10000 });
  for (let i = 0; i < 400; i++) {
    const text = await badge.innerText({ timeout: 300 }).catch(() => null);
    if (text === null) return;
    samples.push(text);
    await page.waitForTimeout(150);
  }
}

const scenarios = {
  async chat(page) {
    await page.goto(baseUrl);
    await page.getByTestId("model-picker").locator("option").first().waitFor({ state: "attached" });
    check("models listed", (await page.getByTestId("model-picker").locator("option").count()) >= 1);
    // Record the agent's text lengths as they change, to see tokens arrive one chunk after another.
    await page.evaluate(() => {
      window.__lengths = [];
      new MutationObserver(() => {
        const els = document.querySelectorAll('[data-testid="message-agent"] .message-text');
        const last = els[els.length - 1];
        if (last) window.__lengths.push(last.textContent.length);
      }).observe(document.body, { subtree: true, childList: true, characterData: true });
    });
    await send(page, "hello there");
    await page.getByTestId("message-user").filter({ hasText: "hello there" }).waitFor();
    await lastAgent(page).filter({ hasText: "until the answer is complete." }).waitFor({ timeout: 15000 });
    const lengths = await page.evaluate(() => [...new Set(window.__lengths)]);
    check("tokens streamed", lengths.length >= 3, { distinct_lengths: lengths.length });
    await page.getByTestId("send").waitFor();
    await page.getByTestId("thread-item").first().waitFor();
    check("thread listed", (await page.getByTestId("thread-item").count()) >= 1);
    check("thread in url", new URL(page.url()).searchParams.get("thread"));
    await shot(page, "answer");
    // A tool call, collapsed, then opened: its arguments and result.
    await send(page, "write notes.md # Notes|first line");
    await lastAgent(page).filter({ hasText: "done:" }).waitFor({ timeout: 15000 });
    const call = page.getByTestId("tool-call").last();
    await call.locator("summary").click();
    const callText = await call.innerText();
    check("tool call args and result", callText.includes("notes.md") && callText.includes("Result"), callText.slice(0, 200));
    // The output in the files tree, previewed.
    await page.getByTestId("file-item").filter({ hasText: "notes.md" }).click();
    await page.getByTestId("preview-text").filter({ hasText: "first line" }).waitFor();
    check("output previewed", true);
    await shot(page, "tool-and-preview");
    // A file asked for and not written: the completion check sends the agent back, and its note is
    // folded into one line under the turn's answer, opened on demand (from the keyboard here).
    const users = await page.getByTestId("message-user").count();
    await send(page, "save it to /mnt/user-data/outputs/never.md");
    await page.getByTestId("check-fold").first().waitFor({ timeout: 15000 });
    await page.getByTestId("send").waitFor({ timeout: 15000 });
    const fold = page.getByTestId("check-fold").last();
    const line = await fold.getByTestId("check-line").innerText();
    check("the check folded into one line", /^checked: \d+ (notes?|findings?), .*left$/.test(line), line);
    const before = await fold.evaluate((el) => el.previousElementSibling?.getAttribute("data-testid"));
    check("placed with the turn's answer", before === "message-agent", before);
    const shown = await page.getByTestId("messages").textContent();
    check("no note text until opened", !shown.includes("Not done yet") && !shown.includes("[harness"), shown.slice(-300));
    check("the reply sent back is folded too", (await page.getByTestId("message-agent").filter({ hasText: "echo: save it" }).count()) === 1);
    check("not as the user's", (await page.getByTestId("message-user").count()) === users + 1);
    await fold.locator("summary").focus();
    await page.keyboard.press("Enter");
    const body = fold.getByTestId("check-body");
    await body.waitFor();
    const bodyText = await body.innerText();
    check("opened: the note's text", bodyText.includes("Not done yet") && bodyText.includes("never.md"), bodyText.slice(0, 300));
    check("its points as a list", (await body.getByTestId("check-note").first().locator("li").count()) >= 2);
    check("what is still found", await body.getByTestId("check-left").isVisible());
    await shot(page, "check-fold");
    // Sent back, the agent writes the file: the line says fixed, and the write shows as a real action.
    const writes = await page.getByTestId("tool-call").filter({ hasText: "write_file" }).count();
    await send(page, "save it to /mnt/user-data/outputs/later.md");
    await page.getByTestId("check-fold").nth(1).waitFor({ timeout: 15000 });
    await page.getByTestId("send").waitFor({ timeout: 15000 });
    const fixed = page.getByTestId("check-fold").last();
    const fixedLine = await fixed.getByTestId("check-line").innerText();
    check("the check's line says fixed", /^checked: \d+ (notes?|findings?), fixed$/.test(fixedLine), fixedLine);
    const earlier = await page.getByTestId("check-line").first().innerText();
    check("an earlier turn does not claim fixed", !earlier.includes("fixed") && earlier.endsWith("then answered"), earlier);
    check("the write after the note is shown", (await page.getByTestId("tool-call").filter({ hasText: "write_file" }).count()) === writes + 1);
    await fixed.locator("summary").click();
    check("opened by a click", (await fixed.getByTestId("check-body").innerText()).includes("later.md"));
    await shot(page, "check-fixed");
    // Reloaded, the thread's state still says it: the latest turn fixed, nothing of the notes shown.
    await page.reload();
    await page.getByTestId("check-line").nth(1).filter({ hasText: "fixed" }).waitFor({ timeout: 15000 });
    const reloaded = await page.getByTestId("messages").textContent();
    check("after a reload, still folded and fixed", !reloaded.includes("Not done yet") && /checked: \d+ (notes?|findings?)/.test(reloaded), true);
    // A run that fails shows its error in the page, which stays usable.
    await send(page, "fail now");
    await page.getByTestId("errors").filter({ hasText: "broke on purpose" }).waitFor({ timeout: 15000 });
    check("run error shown", true);
    await shot(page, "run-error");
  },

  async agents(page) {
    // A custom agent made in the page: a new thread runs on it (its model answers), the thread
    // list names it, an edit makes a new version, and the thread goes on with its agent.
    await page.goto(baseUrl);
    const picker = page.getByTestId("agent-picker");
    await picker.locator("option[value=lead_agent]").waitFor({ state: "attached" });
    check("built-in agent listed", (await picker.inputValue()) === "lead_agent");
    await page.getByTestId("agent-new").click();
    await page.getByTestId("agent-save").click();
    await page.getByTestId("agent-form").getByRole("alert").filter({ hasText: "name" }).waitFor();
    check("a nameless agent is refused in the form", true);
    await page.getByTestId("agent-name").fill("Reporter");
    await page.getByTestId("agent-instructions").fill("You write short reports.");
    await page.getByTestId("agent-model").locator("option[value=worker]").waitFor({ state: "attached" });
    await page.getByTestId("agent-model").selectOption("worker");
    await shot(page, "form");
    await page.getByTestId("agent-save").click();
    await page.getByTestId("agent-form").waitFor({ state: "detached" });
    // the picker takes the new agent once the list holding it has reloaded (a moment later on a busy machine)
    await page.waitForFunction(() => document.querySelector('[data-testid="agent-picker"]')?.value !== "lead_agent", null,
                               { timeout: 10000 }).catch(() => {});
    const id = await picker.inputValue();
    check("the new agent is picked", id !== "lead_agent", id);
    check("its model is its own (no model picker)", (await page.getByTestId("model-picker").count()) === 0);
    await send(page, "who answers?");
    await lastAgent(page).filter({ hasText: "report ready" }).waitFor({ timeout: 15000 });
    check("its model answered", true);
    // the sidebar catches up as the run ends: the thread's title, and no "busy"
    await page.getByTestId("send").waitFor({ timeout: 30000 });
    const ended = async () => page.waitForFunction(() => [...document.querySelectorAll('[data-testid="thread-item"]')].some(
      (b) => b.innerText.includes("who answers?") && !b.innerText.includes("busy")), null, { timeout: 10000 })
      .then(() => true, () => false);
    check("the thread list shows the run ended", await ended(), await page.getByTestId("threads").innerText());
    await page.getByTestId("thread-agent").filter({ hasText: "Reporter" }).first().waitFor();
    check("the thread list names its agent", true);
    const tid = new URL(page.url()).searchParams.get("thread");
    await page.getByTestId("agent-edit").click();
    await page.getByTestId("agent-name").fill("Reporter 2");
    await page.getByTestId("agent-save").click();
    await picker.locator("option", { hasText: "Reporter 2" }).waitFor({ state: "attached" });
    const saved = await (await page.request.get(`${baseUrl}/assistants/${id}`)).json();
    check("an edit is a new version", saved.version === 2 && saved.context.instructions === "You write short reports.", saved);
    await picker.selectOption("lead_agent");
    await page.getByTestId("model-picker").waitFor();
    check("picking the built-in agent starts a new thread", new URL(page.url()).searchParams.get("thread") === null);
    await page.locator(`[data-testid=thread-item][title="${tid}"]`).click();
    await page.waitForFunction((want) => document.querySelector('[data-testid="agent-picker"]').value === want, id);
    check("the thread goes on with its agent", true);
    await shot(page, "thread-on-agent");
    // On a new thread of the built-in agent, the start screen lists the custom agent and the / menu offers it.
    await picker.selectOption("lead_agent");
    await page.getByTestId("start-agent").filter({ hasText: "/reporter-2" }).waitFor();
    check("the start screen lists the custom agent", true);
    await page.getByTestId("input").fill("/reporter"); // "/rep" matches the report-writing skill first
    const item = page.getByTestId("slash-item").filter({ hasText: "/reporter-2" });
    await item.waitFor();
    check("the / menu offers the agent", (await item.innerText()).includes("agent"));
    await shot(page, "slash-agent");
    await page.getByTestId("input").press("Enter");
    await page.waitForFunction((want) => document.querySelector('[data-testid="agent-picker"]').value === want, id);
    check("picking it in the / menu starts a thread on it", new URL(page.url()).searchParams.get("thread") === null
          && (await page.getByTestId("input").inputValue()) === "");
    await send(page, "who answers now?");
    await lastAgent(page).filter({ hasText: "report ready" }).waitFor({ timeout: 15000 });
    check("the agent picked by / answers", true);
    // Leave while it still answers: the sidebar sees its run end without being asked.
    await page.locator(`[data-testid=thread-item][title="${tid}"]`).click();
    const settled = await page.waitForFunction(() => [...document.querySelectorAll('[data-testid="thread-item"]')].some(
      (b) => b.innerText.includes("who answers now?") && !b.innerText.includes("busy")), null, { timeout: 30000 })
      .then(() => true, () => false);
    check("a run that ends out of sight leaves its thread idle in the list", settled, await page.getByTestId("threads").innerText());
  },

  async model(page) {
    // The picker lists the gateway's models; a run uses the one picked, the next run the other.
    await page.goto(baseUrl);
    const picker = page.getByTestId("model-picker");
    await picker.locator("option[value=worker]").waitFor({ state: "attached" });
    check("default model picked", (await picker.inputValue()) === "lead");
    await picker.selectOption("worker");
    await send(page, "who answers?");
    await lastAgent(page).filter({ hasText: "report ready" }).waitFor({ timeout: 15000 });
    check("picked model answered", true);
    await picker.selectOption("lead");
    await send(page, "and now?");
    await lastAgent(page).filter({ hasText: "echo: and now?" }).waitFor({ timeout: 15000 });
    check("default model answered again", true);
    const tid = new URL(page.url()).searchParams.get("thread");
    const state = await (await page.request.get(`${baseUrl}/threads/${tid}/state`)).json();
    check("usage counted per model", state.values.usage?.lead?.model === "lead", state.values.usage?.lead);
    await shot(page, "picked");
  },

  async subagents(page) {
    await page.goto(baseUrl);
    await send(page, "fanout");
    const cards = page.getByTestId("subagent-card");
    await cards.nth(2).waitFor({ timeout: 15000 });
    const live = await page.locator('[data-testid="subagent-card"][data-status="running"]').count();
    check("three cards", (await cards.count()) === 3, await cards.count());
    check("cards live together", live >= 2, { running: live });
    const text = await page.getByTestId("subagent-cards").innerText();
    check("card details", ["Research alpha", "Research beta", "Research gamma", "general-purpose", "tokens"].every((t) => text.includes(t)), text);
    // While a sub-agent's model writes, its card says so and its token count grows.
    const writing = page.getByTestId("card-activity").filter({ hasText: "writing" }).first();
    await writing.waitFor({ timeout: 15000 });
    const count = async () => Number((await page.getByTestId("card-tokens").first().innerText()).replace(/[^0-9]/g, ""));
    const early = await count();
    await page.waitForTimeout(1500);
    const later = await count();
    check("tokens grow while the model writes", early > 0 && later > early, { early, later });
    await shot(page, "running");
    // A reload while they work: the page joins the run again and rebuilds the cards from its events.
    await page.reload();
    await page.getByTestId("subagent-card").nth(2).waitFor({ timeout: 15000 });
    check("cards after reload", (await page.getByTestId("subagent-card").count()) === 3);
    await page.locator('[data-testid="subagent-card"][data-status="completed"]').nth(2).waitFor({ timeout: 20000 });
    await lastAgent(page).filter({ hasText: "all three sub-agents reported" }).waitFor({ timeout: 15000 });
    check("all completed", true);
    await shot(page, "completed");
    // The trace shows what each sub-agent did: its task step, then the sub-agent's own steps.
    await page.getByTestId("trace-toggle").click();
    const panel = page.getByTestId("trace-panel");
    const delegated = panel.getByTestId("trace-step").filter({ hasText: "task: Research beta" });
    await delegated.waitFor({ timeout: 15000 });
    await delegated.locator(".trace-step-head").first().click();
    const sub = delegated.getByTestId("trace-subagent");
    check("subagent in trace", (await sub.getAttribute("data-status")) === "completed" &&
      (await sub.innerText()).includes("general-purpose"), await sub.innerText());
    const inner = sub.getByTestId("trace-substep");
    const innerKinds = await inner.evaluateAll((els) => els.map((e) => e.dataset.kind));
    check("subagent steps", innerKinds.join(",") === "input,model", innerKinds);
    await inner.nth(1).locator(".trace-step-head").click();
    const said = await inner.nth(1).getByTestId("trace-text").innerText();
    check("subagent answer", said.includes("report ready"), said);
    await shot(page, "subagent-trace");
  },

  async interrupt(page) {
    await page.goto(baseUrl);
    await send(page, "ask me");
    const panel = page.getByTestId("interrupt");
    await panel.filter({ hasText: "Which color?" }).waitFor({ timeout: 15000 });
    await shot(page, "question");
    await panel.getByTestId("choice").filter({ hasText: "blue" }).click();
    await lastAgent(page).filter({ hasText: "The user answered: blue" }).waitFor({ timeout: 15000 });
    check("clarification answered", (await panel.count()) === 0);
    // A tool call waiting for approval.
    await send(page, "approve listing");
    await page.getByTestId("approve").waitFor({ timeout: 15000 });
    check("approval shows the call", (await page.getByTestId("interrupt").innerText()).includes("glob"));
    await shot(page, "approval");
    await page.getByTestId("approve").click();
    await lastAgent(page).filter({ hasText: "done:" }).waitFor({ timeout: 15000 });
    check("approved call ran", (await page.getByTestId("interrupt").count()) === 0);
    await shot(page, "answered");
  },

  async upload(page) {
    await page.goto(baseUrl);
    await page.getByTestId("file-input").setInputFiles({ name: "hello.txt", mimeType: "text/plain", buffer: Buffer.from("greetings from a file") });
    await page.getByTestId("notice").filter({ hasText: "hello.txt" }).waitFor({ timeout: 15000 });
    // Drag and drop a second file onto the message box.
    const dt = await page.evaluateHandle(() => {
      const data = new DataTransfer();
      data.items.add(new File(["name,count\nalpha,1\nbeta,2\n"], "table.csv", { type: "text/csv" }));
      return data;
    });
    await page.getByTestId("composer").dispatchEvent("drop", { dataTransfer: dt });
    await page.getByTestId("notice").filter({ hasText: "table.csv" }).waitFor({ timeout: 15000 });
    await page.getByTestId("file-item").filter({ hasText: "table.csv" }).click();
    await page.locator('[data-testid="preview"] td').filter({ hasText: "beta" }).waitFor();
    check("csv previewed as a table", true);
    await send(page, "read hello.txt");
    await lastAgent(page).filter({ hasText: "done:" }).filter({ hasText: "greetings from a file" }).waitFor({ timeout: 15000 });
    check("agent read the upload", true);
    await shot(page, "uploaded");
  },

  async files(page) {
    // The agent writes into the workspace and the outputs: the panel lists both folders from the gateway.
    await page.goto(baseUrl);
    await send(page, "files please");
    await lastAgent(page).filter({ hasText: "done:" }).waitFor({ timeout: 15000 });
    const app = page.locator('[data-testid="file-item"][data-path="/mnt/user-data/workspace/src/app.py"]');
    await app.waitFor();
    await page.locator('[data-testid="file-item"][data-path="/mnt/user-data/outputs/summary.md"]').waitFor();
    const folders = await page.getByTestId("folder-item").evaluateAll((els) => els.map((e) => e.dataset.path));
    check("tree lists workspace and outputs", ["workspace", "workspace/src", "outputs", "uploads"].every((f) => folders.includes(`/mnt/user-data/${f}`)), folders);
    // A code file is previewed highlighted.
    await app.click();
    await page.locator('[data-testid="preview-text"] code.hljs .hljs-keyword').first().waitFor();
    check("code file highlighted", (await page.getByTestId("preview-text").innerText()).includes('return f"hello {name}"'));
    await shot(page, "code-preview");
    // Its download: saved under its own name, with its content; the gateway says attachment.
    const [saved] = await Promise.all([page.waitForEvent("download"), page.getByTestId("download").click()]);
    check("download named and attached", saved.suggestedFilename() === "app.py", saved.suggestedFilename());
    const content = readFileSync(await saved.path(), "utf8");
    const threadId = new URL(page.url()).searchParams.get("thread");
    const head = await page.request.get(`${baseUrl}/api/threads/${threadId}/artifacts/mnt/user-data/workspace/src/app.py?download=true`);
    const disposition = head.headers()["content-disposition"] ?? "";
    check("download content", content.startsWith("def greet(name):") && /^attachment;.*filename="app\.py"/.test(disposition), { disposition, content: content.slice(0, 40) });
    // All outputs at once, as one zip named after the folder.
    const [zip] = await Promise.all([page.waitForEvent("download"), page.getByTestId("download-outputs").click()]);
    const zipBytes = readFileSync(await zip.path());
    check("outputs downloaded as one zip", zip.suggestedFilename() === "outputs.zip" && zipBytes.subarray(0, 2).toString() === "PK"
      && zipBytes.includes(Buffer.from("summary.md")), zip.suggestedFilename());
    // A big text upload is previewed in part, with a note; a binary one is offered for download.
    const line = "a log line that repeats to make a big text file\n";
    await page.getByTestId("file-input").setInputFiles({ name: "big.log", mimeType: "text/plain", buffer: Buffer.from(line.repeat(8000)) });
    await page.getByTestId("notice").filter({ hasText: "big.log" }).waitFor({ timeout: 15000 });
    await page.locator('[data-testid="file-item"][data-path="/mnt/user-data/uploads/big.log"]').click();
    const note = page.getByTestId("preview-truncated");
    await note.waitFor();
    check("big text truncated with a note", (await note.innerText()).includes("Only the first"), await note.innerText());
    await shot(page, "big-text");
    await page.getByTestId("file-input").setInputFiles({ name: "raw.dat", mimeType: "application/octet-stream", buffer: Buffer.from([0, 1, 2, 0, 255, 0, 7]) });
    await page.getByTestId("notice").filter({ hasText: "raw.dat" }).waitFor({ timeout: 15000 });
    await page.locator('[data-testid="file-item"][data-path="/mnt/user-data/uploads/raw.dat"]').click();
    const binary = page.getByTestId("preview-binary");
    await binary.waitFor();
    const [raw] = await Promise.all([page.waitForEvent("download"), binary.getByRole("button").click()]);
    check("binary offered for download", (await binary.innerText()).includes("binary") && raw.suggestedFilename() === "raw.dat");
    await shot(page, "binary");
  },

  async bigupload(page) {
    // A 1 GB file (sparse, made by the test) is over the gateway's limit: the page says so and sends nothing.
    const uploads = [];
    page.on("request", (r) => r.method() === "POST" && r.url().includes("/uploads") && uploads.push(r.url()));
    const limits = page.waitForResponse((r) => r.url().endsWith("/api/limits"));
    await page.goto(baseUrl);
    const limit = (await (await limits).json()).max_upload_bytes;
    await page.getByTestId("file-input").setInputFiles(process.env.WEB_BIG_FILE);
    const error = page.getByTestId("errors").filter({ hasText: "limit" });
    await error.waitFor({ timeout: 10000 });
    const said = await error.innerText();
    check("over the limit shown", said.includes("Not uploaded") && said.includes(`${limit / 2 ** 20} MB`) && said.includes("huge.bin"), said);
    await shot(page, "over-limit");
    // The page stays usable: a small upload and a message still work.
    await page.getByTestId("file-input").setInputFiles({ name: "small.txt", mimeType: "text/plain", buffer: Buffer.from("small and fine") });
    await page.getByTestId("notice").filter({ hasText: "small.txt" }).waitFor({ timeout: 15000 });
    await page.locator('[data-testid="file-item"][data-path="/mnt/user-data/uploads/small.txt"]').waitFor();
    check("small upload works after", (await page.locator('[data-testid="file-item"][data-path$="huge.bin"]').count()) === 0);
    await send(page, "read small.txt");
    await lastAgent(page).filter({ hasText: "small and fine" }).waitFor({ timeout: 15000 });
    check("chat works after", true);
    check("nothing uploaded", uploads.length === 1, uploads.length - 1); // the small file was the only upload request
    await shot(page, "usable-after");
  },

  async auth(page) {
    // A gateway with api_keys: without the key the page says what to do; with it, chat and previews work.
    await page.goto(baseUrl);
    await page.getByTestId("errors").filter({ hasText: "401" }).first().waitFor({ timeout: 10000 });
    check("asks for the key", (await page.getByTestId("errors").innerText()).includes("API key"));
    await page.getByTestId("settings-open").click();
    await page.getByTestId("settings-tab-apikey").click();
    await page.locator('[data-testid="key-verdict"][data-check="required"]').waitFor();
    await page.getByTestId("api-key-input").fill("not-the-key");
    await page.getByTestId("api-key-check").click();
    await page.locator('[data-testid="key-verdict"][data-check="rejected"]').waitFor();
    await page.getByTestId("api-key-input").fill(process.env.WEB_API_KEY);
    await page.getByTestId("api-key-check").click();
    await page.locator('[data-testid="key-verdict"][data-check="accepted"]').waitFor();
    check("key checked in settings", true);
    await Promise.all([page.waitForEvent("load"), page.getByTestId("api-key-save").click()]);
    await send(page, "hello with a key");
    await lastAgent(page).filter({ hasText: "until the answer is complete." }).waitFor({ timeout: 15000 });
    await send(page, `write dot.svg <svg xmlns="http://www.w3.org/2000/svg" width="40" height="40"><circle cx="20" cy="20" r="18" fill="teal"/></svg>`);
    await lastAgent(page).filter({ hasText: "done:" }).waitFor({ timeout: 15000 });
    await page.getByTestId("file-item").filter({ hasText: "dot.svg" }).click();
    const img = page.locator('[data-testid="preview"] img');
    await img.waitFor();
    await page.waitForFunction(() => document.querySelector('[data-testid="preview"] img')?.naturalWidth > 0);
    check("image previewed with the key", true);
    check("no errors left", (await page.getByTestId("errors").count()) === 0);
    await shot(page, "with-key");
  },

  async scheduled(page) {
    // The Scheduled panel: a cron the test fired shows its next time and last result; a bad schedule
    // is refused with an example; a new one is listed, then deleted.
    await page.goto(baseUrl);
    const fired = page.getByTestId("cron-item").filter({ hasText: "status report" });
    await fired.waitFor({ timeout: 10000 });
    const lastText = await fired.getByTestId("cron-last").innerText();
    check("fired cron shows its last result", lastText.startsWith("last success"), lastText);
    const nextText = await fired.getByTestId("cron-next").innerText();
    check("and its next time", nextText.startsWith("next "), nextText);
    await shot(page, "listed");
    const before = await page.getByTestId("cron-item").count();
    await page.getByTestId("schedule-toggle").click();
    await page.getByTestId("schedule-expr").fill("every morning");
    await page.getByTestId("schedule-message").fill("water the plants");
    await page.getByTestId("schedule-create").click();
    const refusal = await page.getByTestId("schedule-error").innerText();
    check("a bad schedule is refused with an example", refusal.includes("0 9 * * 1-5"), refusal);
    await shot(page, "refused");
    await page.getByTestId("schedule-expr").fill("30 7 * * *");
    await page.getByTestId("schedule-create").click();
    const made = page.getByTestId("cron-item").filter({ hasText: "water the plants" });
    await made.waitFor();
    check("the new cron is listed", (await page.getByTestId("cron-item").count()) === before + 1);
    const fresh = `${await made.getByTestId("cron-next").innerText()} / ${await made.getByTestId("cron-last").innerText()}`;
    check("with its next time and no run yet", fresh.startsWith("next ") && fresh.endsWith("never run yet"), fresh);
    await shot(page, "created");
    await made.getByTestId("cron-delete").click();
    await made.waitFor({ state: "detached" });
    check("deleted", (await page.getByTestId("cron-item").count()) === before);
  },

  async down(page) {
    // The gateway unreachable (its requests fail): the page says so and recovers when it is back.
    await page.route("**/api/**", (route) => route.abort("connectionrefused"));
    await page.goto(baseUrl);
    await page.getByTestId("gateway-down").waitFor({ timeout: 10000 });
    await send(page, "hello while down");
    await page.getByTestId("errors").filter({ hasText: "cannot be reached" }).waitFor({ timeout: 10000 });
    check("down shown", true);
    await shot(page, "gateway-down");
    await page.unroute("**/api/**");
    await page.getByTestId("gateway-down").waitFor({ state: "detached", timeout: 10000 });
    await page.getByTestId("model-picker").locator("option").first().waitFor({ state: "attached" });
    check("stale errors cleared", (await page.getByTestId("errors").count()) === 0);
    await page.getByTestId("new-thread").click();
    await send(page, "hello again");
    await lastAgent(page).filter({ hasText: "until the answer is complete." }).waitFor({ timeout: 15000 });
    check("usable after recovery", true);
    await shot(page, "recovered");
  },

  async branch(page) {
    await page.goto(baseUrl);
    await send(page, "first message");
    await lastAgent(page).filter({ hasText: "echo: first message" }).waitFor({ timeout: 15000 });
    await send(page, "second message");
    await lastAgent(page).filter({ hasText: "echo: second message" }).waitFor({ timeout: 15000 });
    await page.getByTestId("send").waitFor();
    // Edit the second message: the thread branches from the checkpoint before it.
    await page.getByTestId("message-user").nth(1).getByTestId("edit").click();
    await page.getByTestId("edit-input").fill("third message");
    await page.getByTestId("edit-save").click();
    await lastAgent(page).filter({ hasText: "echo: third message" }).waitFor({ timeout: 15000 });
    await page.getByTestId("send").waitFor();
    const texts = await page.locator('[data-testid^="message-"] .message-text').allInnerTexts();
    check("edited branch", JSON.stringify(texts) === JSON.stringify(["first message", "echo: first message", "third message", "echo: third message"]), texts);
    // Regenerate: the answer is replaced by a new message (the old element is marked to tell them apart).
    await lastAgent(page).evaluate((el) => { el.dataset.old = "1"; });
    await page.getByTestId("regenerate").click();
    await page.locator('[data-testid="message-agent"]:not([data-old])').filter({ hasText: "echo: third message" }).waitFor({ timeout: 15000 });
    await page.getByTestId("send").waitFor();
    const again = await page.locator('[data-testid^="message-"] .message-text').allInnerTexts();
    check("regenerated in place", again.length === 4 && again[3] === "echo: third message", again);
    await shot(page, "edited");
  },

  async stop(page) {
    await page.goto(baseUrl);
    await send(page, "slow 8");
    await page.getByTestId("tool-call").first().waitFor({ timeout: 15000 });
    const doing = await page.getByTestId("running").innerText();
    check("the header says what the agent is doing, and for how long", /^(thinking|calling ls) · \d+ s$/.test(doing), doing);
    await page.getByTestId("stop").click();
    await page.getByTestId("notice").filter({ hasText: "Stopped" }).waitFor();
    await page.getByTestId("running").waitFor({ state: "detached" });
    const threadId = new URL(page.url()).searchParams.get("thread");
    // The run is cancelled on the gateway, not only no longer followed by the page.
    let status = "busy";
    for (let i = 0; i < 50 && status === "busy"; i++) {
      status = (await (await page.request.get(`${baseUrl}/api/langgraph/threads/${threadId}`)).json()).status;
      if (status === "busy") await page.waitForTimeout(100);
    }
    check("run cancelled on the gateway", status !== "busy", { status });
    check("no empty question box after the stop", (await page.getByTestId("interrupt").count()) === 0);
    const listed = page.getByTestId("thread-item").filter({ hasText: "slow 8" });
    await listed.waitFor();
    check("the thread list does not say busy", !(await listed.innerText()).includes("busy"), await listed.innerText());
    await page.waitForTimeout(1500);
    check("no more steps", (await page.getByTestId("tool-call").count()) < 8);
    await shot(page, "stopped");

    // Stopped while the answer streams: the words already shown stay, in the page and in the thread.
    await page.getByTestId("new-thread").click();
    await send(page, "story please");
    await lastAgent(page).filter({ hasText: "Once upon a time" }).waitFor({ timeout: 15000 });
    await page.getByTestId("stop").click();
    await page.getByTestId("notice").filter({ hasText: "Stopped" }).waitFor();
    await page.getByTestId("running").waitFor({ state: "detached" });
    const kept = await lastAgent(page).locator(".message-text").innerText();
    check("the stopped answer stays on the page", kept.startsWith("Once upon a time") && !kept.includes("and it ended."), kept);
    const storyThread = new URL(page.url()).searchParams.get("thread");
    const state = await (await page.request.get(`${baseUrl}/api/langgraph/threads/${storyThread}/state`)).json();
    const saved = state.values.messages.at(-1);
    check("the stopped answer is saved in the thread", saved.type === "ai" && saved.content.startsWith("Once upon a time") && state.next.length === 0, { type: saved.type, next: state.next });
    await page.reload();
    await lastAgent(page).filter({ hasText: "Once upon a time" }).waitFor({ timeout: 15000 });
    check("and is there after a reload", true);
    await shot(page, "stopped-answer");
  },

  async stopKeepsFiles(page) {
    // A file is written, then the answer streams; a stop keeps both: the words so far and the
    // file, in the page and in the thread, after a reload too.
    await page.goto(baseUrl);
    await send(page, "essay please");
    const file = page.locator('[data-testid="file-item"][data-path="/mnt/user-data/outputs/essay-notes.md"]');
    await lastAgent(page).filter({ hasText: "Once upon a time" }).waitFor({ timeout: 20000 });
    await file.waitFor({ timeout: 10000 });
    await page.getByTestId("stop").click();
    await page.getByTestId("notice").filter({ hasText: "Stopped" }).waitFor();
    await page.getByTestId("running").waitFor({ state: "detached" });
    const outcome = page.locator('[data-testid="run-outcome"][data-status="stopped"]');
    check("the line says the run was stopped and its work kept", (await outcome.innerText()).startsWith("Stopped: what was written so far is kept"));
    const shown = await lastAgent(page).locator(".message-text").innerText();
    await page.waitForTimeout(1000); // the gateway has ended the run: nothing more arrives
    await page.reload();
    const after = lastAgent(page).filter({ hasText: "Once upon a time" });
    await after.waitFor({ timeout: 15000 });
    const kept = await after.locator(".message-text").innerText();
    await outcome.waitFor({ timeout: 5000 });
    check("the stop is still said after a reload", (await outcome.innerText()).startsWith("Stopped"));
    check("the words so far are kept after a reload", kept.startsWith("Once upon a time") && !kept.includes("and it ended.") && kept.length >= shown.length - 6,
      { shown: shown.length, kept: kept.length });
    await file.waitFor({ timeout: 10000 });
    check("the file written before the stop is listed after a reload", (await file.count()) === 1);
    await file.click();
    const viewer = page.getByTestId("preview-text");
    await viewer.filter({ hasText: "a stop must keep this file" }).waitFor({ timeout: 10000 });
    check("and holds what was written", true);
    check("the tool call that wrote it is shown", (await page.getByTestId("tool-call").filter({ hasText: "write_file" }).count()) === 1);
    await shot(page, "stopped-with-file");
  },

  async reload(page) {
    await page.goto(baseUrl);
    await send(page, "slow 4");
    await page.getByTestId("tool-call").first().waitFor({ timeout: 15000 });
    const before = await page.getByTestId("tool-call").count();
    await shot(page, "before-reload");
    await page.reload();
    await page.getByTestId("message-user").filter({ hasText: "slow 4" }).waitFor({ timeout: 15000 });
    await page.getByTestId("running").waitFor({ timeout: 10000 });
    check("rejoined the running stream", true);
    await lastAgent(page).filter({ hasText: "done after 4 slow steps" }).waitFor({ timeout: 30000 });
    const calls = await page.getByTestId("tool-call").count();
    check("all steps shown", calls === 4, { before, after: calls });
    await page.getByTestId("running").waitFor({ state: "detached", timeout: 10000 });
    await shot(page, "after-reload");
  },

  async start(page) {
    // A new thread: example tasks and the skills, and / in the composer lists skills to pick.
    await page.goto(baseUrl);
    const start = page.getByTestId("start-screen");
    await start.waitFor();
    const examples = await start.getByTestId("example").allInnerTexts();
    check("example tasks", examples.length >= 3, examples);
    await start.getByTestId("start-skill").first().waitFor();
    const skills = await start.getByTestId("start-skill").allInnerTexts();
    check("skills listed with a line each", skills.some((s) => s.startsWith("/data-analysis ") && s.length > 20), skills);
    await shot(page, "start");
    await start.getByTestId("example").first().click();
    const filled = await page
      .waitForFunction((t) => document.querySelector('[data-testid="input"]')?.value === t, examples[0], { timeout: 5000 })
      .then(() => true, () => false);
    check("an example fills the composer", filled, await page.getByTestId("input").inputValue());
    await page.getByTestId("input").fill("/d");
    await page.getByTestId("slash-menu").waitFor();
    const items = await page.getByTestId("slash-item").allInnerTexts();
    check("the / menu lists matching skills", items.length >= 1 && items[0].startsWith("/d"), items);
    await shot(page, "slash-menu");
    await page.getByTestId("input").press("Enter");
    const chip = (await page.getByTestId("skill-chip").allInnerTexts()).map((t) => t.replace("×", "").trim());
    check("Enter picks the skill", chip.length === 1 && /^\/d[a-z-]+$/.test(chip[0]) && (await page.getByTestId("input").inputValue()) === "", chip);
    check("the menu closes", (await page.getByTestId("slash-menu").count()) === 0);
    await page.getByTestId("input").pressSequentially("hello there");
    await page.getByTestId("input").press("Enter");
    await lastAgent(page).filter({ hasText: `echo: ${chip[0]} hello there` }).waitFor({ timeout: 15000 });
    check("the start screen gives way to the thread", (await page.getByTestId("start-screen").count()) === 0);
  },

  async picker(page) {
    // The Skills button opens the picker with a filter box; the keyboard picks two skills as chips;
    // a / typed in the middle of the text opens it again; the message goes out with a /name for each.
    await page.goto(baseUrl);
    await page.getByTestId("start-screen").waitFor();
    await page.getByTestId("start-skill").first().waitFor();
    await page.getByTestId("skill-button").click();
    const filter = page.getByTestId("skill-filter");
    await filter.waitFor();
    const all = await page.getByTestId("slash-item").count();
    check("the button lists the skills", all >= 3, all);
    await filter.pressSequentially("diagr");
    const filtered = await page.getByTestId("slash-item").allInnerTexts();
    check("the filter narrows the list", filtered.length >= 1 && filtered.length < all && filtered[0].startsWith("/diagram"), filtered);
    await filter.press("Enter");
    await filter.fill("csv"); // found by its description
    const byWord = await page.getByTestId("slash-item").allInnerTexts();
    check("a word of the description finds a skill", byWord.some((t) => t.startsWith("/data-analysis")), byWord);
    const index = byWord.findIndex((t) => t.startsWith("/data-analysis"));
    for (let i = 0; i < index; i++) await filter.press("ArrowDown");
    await filter.press("Enter");
    await shot(page, "picked-two");
    await filter.press("Escape");
    check("Escape closes the picker", (await page.getByTestId("skill-picker").count()) === 0);
    const chips = async () => (await page.getByTestId("skill-chip").allInnerTexts()).map((t) => t.replace("×", "").trim());
    check("two skills are picked as chips", JSON.stringify(await chips()) === JSON.stringify(["/diagram", "/data-analysis"]), await chips());
    const input = page.getByTestId("input");
    await input.pressSequentially("chart sales by month /rep");
    await page.getByTestId("slash-menu").waitFor();
    const mid = await page.getByTestId("slash-item").allInnerTexts();
    check("/ in the middle of the text opens the picker", mid[0]?.startsWith("/report-writing"), mid);
    await shot(page, "slash-mid-text");
    await input.press("Enter");
    check("the pick leaves the text without its /name", (await input.inputValue()) === "chart sales by month ", await input.inputValue());
    check("a third chip", (await chips()).length === 3, await chips());
    await page.getByRole("button", { name: "Remove /diagram" }).click();
    await input.pressSequentially("please");
    await input.press("Enter");
    await lastAgent(page).filter({ hasText: "echo: /data-analysis /report-writing chart sales by month please" }).waitFor({ timeout: 15000 });
    check("the message goes out with a /name for each picked skill", true);
    check("the chips are gone after sending", (await page.getByTestId("skill-chip").count()) === 0);
  },

  async firstsession(page) {
    // A newcomer's first session in one thread: an example, an upload, sub-agents, a stop, the
    // outputs; the header says what the agent is doing at every moment a run is going.
    const samples = [];
    await page.goto(baseUrl);
    const start = page.getByTestId("start-screen");
    await start.waitFor();
    await start.getByTestId("example").first().click();
    // The example fills the composer on its next render: pressing Enter before that sent nothing.
    await page.waitForFunction(() => document.querySelector('[data-testid="input"]')?.value.trim().length > 0, null, { timeout: 5000 });
    await page.getByTestId("input").press("Enter");
    await watchRun(page, samples);
    await lastAgent(page).filter({ hasText: "echo:" }).waitFor({ timeout: 15000 });
    check("an example ran", true);
    await shot(page, "example");

    await page.getByTestId("file-input").setInputFiles({ name: "sales.csv", mimeType: "text/csv", buffer: Buffer.from("region,total\nnorth,120\nsouth,80\n") });
    await page.getByTestId("notice").filter({ hasText: "sales.csv" }).waitFor({ timeout: 15000 });
    await send(page, "read sales.csv");
    await watchRun(page, samples);
    await lastAgent(page).filter({ hasText: "north,120" }).waitFor({ timeout: 15000 });
    check("the upload was read", true);

    await send(page, "plan it");
    await watchRun(page, samples);
    const plan = page.getByTestId("todos");
    await plan.waitFor({ timeout: 15000 });
    const planText = await plan.innerText();
    check("the plan is shown with what is done", planText.includes("1/3") && planText.includes("Sum the totals"), planText);

    await send(page, "fanout");
    const during = [];
    const watching = watchRun(page, during);
    // Stop one sub-agent from its card: it ends cancelled, the other two finish and the run goes on.
    const gamma = page.getByTestId("subagent-card").filter({ hasText: "Research gamma" });
    await gamma.getByTestId("card-stop").click({ timeout: 15000 });
    await page.locator('[data-testid="subagent-card"][data-status="cancelled"]').waitFor({ timeout: 15000 });
    await watching;
    samples.push(...during);
    await lastAgent(page).filter({ hasText: "all three sub-agents reported" }).waitFor({ timeout: 30000 });
    const statuses = await page.getByTestId("subagent-card").evaluateAll((els) => els.map((e) => e.dataset.status));
    check("one sub-agent stopped, two completed", statuses.filter((s) => s === "completed").length === 2 && (await gamma.getAttribute("data-status")) === "cancelled", statuses);
    check("the header said it waited for sub-agents", during.some((s) => s.startsWith("waiting for sub-agents")), during);
    await shot(page, "subagents");

    await send(page, "story please");
    await lastAgent(page).filter({ hasText: "Once upon a time" }).waitFor({ timeout: 15000 });
    await page.getByTestId("stop").click();
    await page.getByTestId("running").waitFor({ state: "detached" });
    const kept = await lastAgent(page).locator(".message-text").innerText();
    check("the stopped answer is kept", kept.startsWith("Once upon a time") && !kept.includes("and it ended."), kept);

    await send(page, "write report.md # Sales|North sold more than south.");
    await watchRun(page, samples);
    await lastAgent(page).filter({ hasText: "done:" }).waitFor({ timeout: 15000 });
    const report = page.locator('[data-testid="file-item"][data-path="/mnt/user-data/outputs/report.md"]');
    await report.waitFor({ timeout: 10000 });
    await report.click();
    await page.locator('[data-testid="preview-text"] h3').filter({ hasText: "Sales" }).waitFor(); // a heading, not "# Sales"
    check("the report is rendered in the preview", true);
    const [zip] = await Promise.all([page.waitForEvent("download"), page.getByTestId("download-outputs").click()]);
    const zipBytes = readFileSync(await zip.path());
    check("outputs download as one zip", zipBytes.includes(Buffer.from("report.md")), zip.suggestedFilename());
    await shot(page, "outputs");
    // An image (a chart) is shown in the preview, not offered as a download only.
    const png = Buffer.from( // a 2x2 red PNG
      "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAEElEQVR4nGP4z8AARAwQCgAf7gP9i18U1AAAAABJRU5ErkJggg==", "base64");
    await page.getByTestId("file-input").setInputFiles({ name: "chart.png", mimeType: "image/png", buffer: png });
    await page.getByTestId("notice").filter({ hasText: "chart.png" }).waitFor({ timeout: 15000 });
    await page.locator('[data-testid="file-item"][data-path="/mnt/user-data/uploads/chart.png"]').click();
    const img = page.locator('[data-testid="preview"] img');
    await img.waitFor();
    check("an image is shown inline", await img.evaluate((el) => el.complete && el.naturalWidth === 2));
    const said = /^(thinking|calling [a-z_, ]+|waiting for sub-agents) · \d+ s$/;
    check("the header always said what the agent was doing", samples.length >= 5 && samples.every((s) => said.test(s)), samples);
  },

  async timetravel(page) {
    // The trace offers, per step, to put the files back as they were after it, or to run again from it.
    await page.goto(baseUrl);
    await send(page, "write a.txt one");
    await lastAgent(page).filter({ hasText: "done:" }).waitFor({ timeout: 15000 });
    await send(page, "write a.txt two");
    await lastAgent(page).filter({ hasText: "done:" }).filter({ hasText: "Wrote 3 bytes" }).last().waitFor({ timeout: 15000 });
    await page.getByTestId("send").waitFor();
    const threadId = new URL(page.url()).searchParams.get("thread");
    const file = async () => (await page.request.get(`${baseUrl}/api/threads/${threadId}/artifacts/mnt/user-data/outputs/a.txt`)).text();
    check("the second write is on disk", (await file()) === "two");
    await page.getByTestId("trace-toggle").click();
    const firstWrite = page.locator('[data-testid="trace-step"][data-kind="tool"]').filter({ hasText: "write_file" }).first();
    await firstWrite.waitFor({ timeout: 15000 });
    await firstWrite.locator(".trace-step-head").first().click();
    await firstWrite.getByTestId("trace-restore").click();
    await page.getByTestId("notice").filter({ hasText: "Files restored" }).waitFor({ timeout: 15000 });
    check("restore files to this step", (await file()) === "one", await file());
    await shot(page, "restored");
    await send(page, "write b.txt three");
    await lastAgent(page).filter({ hasText: "Wrote 5 bytes" }).waitFor({ timeout: 15000 });
    await page.getByTestId("send").waitFor();
    const other = async () => (await page.request.get(`${baseUrl}/api/threads/${threadId}/artifacts/mnt/user-data/outputs/b.txt`)).status();
    check("written again", (await other()) === 200);
    const again = page.locator('[data-testid="trace-step"][data-kind="tool"]').filter({ hasText: "write_file" }).first();
    await again.waitFor({ timeout: 15000 });
    if (!(await again.getByTestId("trace-run-from").count())) await again.locator(".trace-step-head").first().click();
    await again.getByTestId("trace-run-from").click();
    await page.getByTestId("send").waitFor({ timeout: 15000 });
    await page.waitForTimeout(500);
    check("run again from a step starts from its files", (await file()) === "one" && (await other()) === 404, await file());
    await shot(page, "ran-from-step");
  },

  async settings(page) {
    // The gateway holds three facts about the user (seeded by the test) and the repository's skills.
    const api = async (path) => (await page.request.get(`${baseUrl}${path}`)).json();
    await page.context().grantPermissions(["clipboard-read", "clipboard-write"], { origin: baseUrl });
    await page.goto(baseUrl);
    await page.getByTestId("settings-open").click();
    const dialog = page.getByTestId("settings");
    await dialog.waitFor();
    // Memory: the facts, one edited, one deleted, and the gateway has the change.
    const facts = dialog.getByTestId("fact");
    await facts.nth(2).waitFor();
    const listed = await facts.allInnerTexts();
    check("facts shown", ["green tea", "Lyon", "PostgreSQL"].every((t) => listed.some((f) => f.includes(t))), listed);
    const tea = facts.filter({ hasText: "green tea" });
    await tea.getByTestId("fact-edit").click();
    await dialog.getByTestId("fact-input").fill("I prefer black tea");
    await dialog.getByTestId("fact-save").click();
    // The row leaves edit mode once the gateway answered (while editing, the textarea itself
    // holds the new text, so waiting for the text alone could pass before the save).
    await dialog.getByTestId("fact-input").waitFor({ state: "detached" });
    await facts.locator(".fact-text", { hasText: "I prefer black tea" }).waitFor();
    const afterEdit = (await api("/api/memory")).facts.map((f) => f.content);
    check("fact edited on the gateway", afterEdit.includes("I prefer black tea") && !afterEdit.some((f) => f.includes("green tea")), afterEdit);
    const lyon = facts.filter({ hasText: "Lyon" });
    await lyon.getByTestId("fact-delete").click();
    await lyon.getByTestId("fact-delete-confirm").click();
    await lyon.waitFor({ state: "detached" });
    const afterDelete = (await api("/api/memory")).facts.map((f) => f.content);
    check("fact deleted on the gateway", afterDelete.length === 2 && !afterDelete.some((f) => f.includes("Lyon")), afterDelete);
    // Export: a JSON download, named by the gateway, holding the facts as they are now.
    const [exported] = await Promise.all([page.waitForEvent("download"), dialog.getByTestId("memory-export").click()]);
    const dump = JSON.parse(readFileSync(await exported.path(), "utf8"));
    const dumped = Object.values(dump)[0]?.facts?.map((f) => f.content) ?? [];
    check("memory exported", /^herdsman-memory-.+\.json$/.test(exported.suggestedFilename()) &&
      dumped.length === 2 && dumped.includes("I prefer black tea"), { name: exported.suggestedFilename(), dumped });
    // The graph: Atlas with where it deploys now and where it did before; the old relation deleted,
    // the current one ended (no longer true); then memory switched off for this user.
    const atlas = dialog.getByTestId("entity").filter({ has: page.locator("strong", { hasText: /^Atlas$/ }) });
    await atlas.waitFor();
    const said = await atlas.getByTestId("relation").allInnerTexts();
    check("graph with history shown", said.some((t) => t.includes("Atlas deploys to GCP (since 2026-03-01)")) &&
      said.some((t) => t.includes("Atlas deploys to AWS (2026-01-10 – 2026-03-01)")), said);
    const old = atlas.getByTestId("relation").filter({ hasText: "deploys to AWS" });
    await old.getByTestId("relation-delete").click();
    await old.getByTestId("relation-delete-confirm").click();
    await old.waitFor({ state: "detached" });
    const left = (await api("/api/memory/graph")).relations.map((r) => `${r.predicate} ${r.object_name}`);
    check("relation deleted on the gateway", left.length === 1 && left[0] === "deploys_to GCP", left);
    const current = atlas.getByTestId("relation").filter({ hasText: "deploys to GCP" });
    await current.getByTestId("relation-end").click();
    await current.getByTestId("relation-end-confirm").click();
    await current.filter({ hasText: "2026-03-01 – " }).waitFor();
    const ended = (await api("/api/memory/graph")).relations.map((r) => r.valid_to);
    check("relation ended on the gateway", ended.length === 1 && /^\d{4}-\d{2}-\d{2}$/.test(ended[0] ?? ""), ended);
    // ... and it was wrong: Atlas deployed to Azure, not GCP (corrected: a new id, the same dates)
    const rid = await current.getAttribute("data-relation-id");
    const item = atlas.locator(`[data-relation-id="${rid}"]`);
    await item.getByTestId("relation-correct").click();
    await item.getByTestId("relation-object").fill("Azure");
    await item.getByTestId("relation-correct-save").click();
    await atlas.getByTestId("relation").filter({ hasText: "Atlas deploys to Azure (2026-03-01 – " }).waitFor();
    const fixed = (await api("/api/memory/graph")).relations;
    check("relation corrected on the gateway", fixed.length === 1 && fixed[0].object_name === "Azure" &&
      fixed[0].id !== rid && fixed[0].valid_to === ended[0], fixed);
    // The audit trail: every write, newest first, with where it came from (these edits: the API).
    await dialog.getByTestId("memory-audit").locator("summary").click();
    await dialog.getByTestId("audit-record").first().waitFor();
    const trail = await dialog.getByTestId("audit-record").allInnerTexts();
    check("audit trail shown", trail[0].includes(`correct relation ${fixed[0].id} (api`) &&
      trail.some((t) => t.includes(`close relation ${rid} (api`)), trail.slice(0, 6));
    await dialog.getByTestId("memory-enabled").click();
    await page.waitForFunction(async (url) => (await (await fetch(`${url}/api/memory/settings`)).json()).enabled === false, baseUrl);
    check("memory switched off", (await api("/api/memory")).enabled === false);
    await shot(page, "memory");
    // Skills: listed; one switched off (the gateway says so); its SKILL.md read.
    await dialog.getByTestId("settings-tab-skills").click();
    const enabled = dialog.locator('[data-testid="skill"][data-status="enabled"]');
    await enabled.first().waitFor();
    const name = await enabled.first().getAttribute("data-skill");
    check("skills listed", (await dialog.getByTestId("skill").count()) >= 1, { first: name });
    const row = dialog.locator(`[data-testid="skill"][data-skill="${name}"]`);
    await row.getByTestId("skill-toggle").uncheck();
    await dialog.locator(`[data-testid="skill"][data-skill="${name}"][data-status="disabled"]`).waitFor();
    const skill = await api(`/api/skills/${name}`);
    check("skill disabled on the gateway", skill.enabled === false && skill.status === "disabled", { enabled: skill.enabled, status: skill.status });
    await row.getByTestId("skill-read").click();
    const md = row.getByTestId("skill-md");
    await md.filter({ hasText: `name: ${name}` }).waitFor();
    check("SKILL.md shown", (await md.innerText()).includes(skill.path));
    await shot(page, "skills");
    // Models: the scripted models need no key; a failed call shows its error and the rest still works.
    await page.route("**/api/mcp/status", (route) => route.abort("connectionrefused"));
    await dialog.getByTestId("settings-tab-models").click();
    const rows = dialog.getByTestId("model-row");
    await rows.nth(1).waitFor();
    const models = await rows.evaluateAll((els) => els.map((e) => [e.dataset.model, e.dataset.key, e.textContent]));
    check("models with key status", models.length === 2 && models.every(([, key, text]) => key === "not needed" && text.includes("ScriptedChatModel")), models);
    await dialog.getByTestId("settings-error").filter({ hasText: "cannot be reached" }).waitFor();
    check("failed call shown in the panel", (await rows.count()) === 2);
    await shot(page, "models");
    await page.unroute("**/api/mcp/status");
    // API key: this gateway has auth off.
    await dialog.getByTestId("settings-tab-apikey").click();
    await dialog.locator('[data-testid="key-verdict"][data-check="not required"]').waitFor();
    check("key status shown", true);
    await page.keyboard.press("Escape");
    await dialog.waitFor({ state: "detached" });
    // An answer with a fenced Python block is highlighted and can be copied.
    await send(page, "code sample");
    const code = lastAgent(page).locator("pre.code code");
    await code.locator(".hljs-comment").filter({ hasText: "# polite" }).waitFor({ timeout: 15000 }); // the whole block has arrived
    const classes = await code.locator('span[class^="hljs-"]').evaluateAll((els) => [...new Set(els.map((e) => e.className))]);
    check("code highlighted", classes.includes("hljs-keyword") && classes.includes("hljs-comment"), classes);
    await lastAgent(page).locator(".code-copy").click();
    await lastAgent(page).locator(".code-copy").filter({ hasText: "Copied" }).waitFor();
    const copied = await page.evaluate(() => navigator.clipboard.readText());
    check("code copied", copied.startsWith("def greet(name):") && copied.includes("# polite"), copied);
    await shot(page, "code");
  },
  async memoryoff(page) {
    // The gateway runs with memory off (the default): the Memory tab says so, with its switch and the
    // setting that turns it on, instead of the 409s of the memory routes.
    await page.goto(baseUrl);
    await page.getByTestId("settings-open").click();
    const dialog = page.getByTestId("settings");
    const off = dialog.getByTestId("memory-off");
    await off.waitFor();
    const toggle = off.getByTestId("memory-enabled");
    check("an off switch", !(await toggle.isChecked()) && (await toggle.isDisabled()));
    const setting = await off.getByTestId("memory-off-setting").innerText();
    check("the setting to change", /memory:\s*\n\s*enabled: true/.test(setting), setting);
    check("and how", (await off.innerText()).includes("restart"), await off.innerText());
    await page.waitForTimeout(500); // anything else the tab loads has answered
    const text = await dialog.innerText();
    check("no raw 409 error", !text.includes("409") && (await dialog.getByTestId("settings-error").count()) === 0, text);
    await off.getByTestId("memory-check-again").click();
    await off.waitFor();
    check("still off when checked again", (await dialog.getByTestId("settings-error").count()) === 0);
    await shot(page, "memory-off");
  },

  async filesnote(page) {
    // "No files yet" only while the thread has no file: not under a tree that lists files.
    await page.goto(baseUrl);
    await send(page, "echo first");
    await lastAgent(page).filter({ hasText: "echo: echo first" }).waitFor({ timeout: 15000 });
    await page.getByTestId("send").waitFor();
    const note = page.getByTestId("files").getByTestId("files-none");
    await note.waitFor({ timeout: 10000 });
    check("no files: said so", (await note.innerText()).includes("No files yet"));
    // A file deeper than the panel lists at once (a project's nested folders): folders only in the
    // listing, the file further down; the panel must not say there are no files.
    const deep = "/mnt/user-data/outputs/src/main/java/org/example/app/util/Main.java";
    await send(page, "write src/main/java/org/example/app/util/Main.java class Main {}");
    await lastAgent(page).filter({ hasText: "done:" }).waitFor({ timeout: 15000 });
    await page.getByTestId("send").waitFor();
    await page.locator('[data-testid="folder-item"][data-path="/mnt/user-data/outputs/src/main/java/org/example/app/util"]').waitFor();
    await page.waitForTimeout(3000); // a refresh or two of the listing
    const panel = await page.getByTestId("files").innerText();
    check("files below the listed depth, and no claim that there are none", !panel.includes("No files yet") &&
      (await page.getByTestId("files-none").count()) === 0, panel);
    check("the outputs can be downloaded", (await page.getByTestId("download-outputs").count()) === 1);
    await page.getByTestId("folder-list-more").first().click();
    await page.locator(`[data-testid="file-item"][data-path="${deep}"]`).click();
    await page.getByTestId("preview-text").filter({ hasText: "class Main" }).waitFor();
    check("the deeper folder listed on demand", true);
    await shot(page, "files-listed");
  },

  async progress(page) {
    // A bash call: its command grows in its card while the model writes it; then the line under the
    // header says it runs that command, with its elapsed time; later, while the model thinks, an
    // estimate of a model step's duration here.
    await page.goto(baseUrl);
    await page.evaluate(() => {
      window.__headlines = [];
      window.__statuses = [];
      new MutationObserver(() => {
        const card = document.querySelector('[data-testid="tool-call"]');
        const line = card?.querySelector('[data-testid="tool-headline"]');
        if (line) window.__headlines.push(line.textContent.length);
        if (card) window.__statuses.push(card.dataset.status);
      }).observe(document.body, { subtree: true, childList: true, characterData: true, attributes: true });
    });
    await send(page, "sleep please");
    const detail = page.getByTestId("run-detail");
    await detail.filter({ hasText: "running bash sleep 3" }).waitFor({ timeout: 15000 });
    // The command takes 3 s: wait for its elapsed time to reach a second (no fixed pause, which a
    // loaded machine can stretch past the command's end).
    const elapsed = /^step 1 · running bash sleep 3; echo woke up.* · [1-9] s$/;
    const running = await detail.filter({ hasText: elapsed }).innerText({ timeout: 5000 })
      .catch(async () => (await detail.allInnerTexts()).join(" | "));
    check("the command running, and for how long", elapsed.test(running), running);
    const lengths = await page.evaluate(() => [...new Set(window.__headlines)]);
    check("the call's command grew while it was written", lengths.length >= 3, lengths);
    check("the card said it was being written", await page.evaluate(() => window.__statuses.includes("writing")));
    await shot(page, "running-command");
    await lastAgent(page).filter({ hasText: "done:" }).waitFor({ timeout: 15000 });
    await page.getByTestId("send").waitFor();
    check("no outcome line after a run that delivered", (await page.getByTestId("run-outcome").count()) === 0);
    // A new page (nothing measured in it) and a new thread: the estimate comes from the gateway,
    // from the model steps of the runs before, on this first step already.
    await page.goto(baseUrl);
    const known = await page.evaluate(async () => (await fetch("/api/model-steps")).json());
    await send(page, "hello again");
    const estimate = page.getByTestId("run-estimate").filter({ hasText: "estimated" });
    await estimate.waitFor({ timeout: 10000 });
    const said = await estimate.innerText();
    check("an estimate of a model step here", known.samples >= 2 && said.includes(`per step here, estimated from the last ${known.samples}`)
      && /about \d+ s per step/.test(said), [said, known]);
  },

  async drafts(page) {
    // The lead sends its call whole at the end, and drafts of its text meanwhile (as the embedded
    // model does): a "being written" card shows the text growing, the line under the header names
    // the call; then the real call's card replaces the draft.
    await page.goto(baseUrl);
    await page.evaluate(() => {
      window.__drafts = [];
      window.__lines = [];
      new MutationObserver(() => {
        const text = document.querySelector('[data-testid="tool-call-draft"] [data-testid="draft-text"]');
        if (text) window.__drafts.push(text.textContent);
        const line = document.querySelector('[data-testid="run-detail"][data-kind="writing"]');
        if (line) window.__lines.push(line.textContent);
        const badge = document.querySelector('[data-testid="running"]');
        if (badge) window.__badges = [...(window.__badges ?? []), badge.textContent];
      }).observe(document.body, { subtree: true, childList: true, characterData: true });
    });
    await send(page, "draft please");
    await page.getByTestId("tool-call-draft").waitFor({ timeout: 15000 });
    await shot(page, "call-being-written");
    await lastAgent(page).filter({ hasText: "done:" }).waitFor({ timeout: 20000 });
    const drafts = await page.evaluate(() => [...new Set(window.__drafts)]);
    const grew = drafts.length >= 3 && drafts.every((d, i) => i === 0 || (d.length > drafts[i - 1].length && d.startsWith(drafts[i - 1])));
    check("the call's text grew in a card while it was written", grew && drafts.at(-1).includes("Line 2: the embedded model"), drafts.slice(-2));
    const lines = await page.evaluate(() => [...new Set(window.__lines)]);
    check("the line said which call is written", lines.some((l) => /^step 1 · writing the call write_file \/mnt\/user-data\/outputs\/draft\.md · \d+ characters/.test(l)), lines.slice(-2));
    const badges = await page.evaluate(() => [...new Set(window.__badges)]);
    check("the header said a call is written", badges.some((b) => /^writing write_file · \d+ s$/.test(b)), badges);
    const card = page.getByTestId("tool-call").filter({ hasText: "write_file" });
    check("the real call replaced the draft", (await page.getByTestId("tool-call-draft").count()) === 0 && (await card.count()) === 1);
    await page.getByTestId("send").waitFor();
    const file = page.locator('[data-testid="file-item"][data-path="/mnt/user-data/outputs/draft.md"]');
    await file.waitFor({ timeout: 10000 });
    check("the file was written", (await file.count()) === 1);
  },

  async textcall(page) {
    // The model writes a tool call as text (hundreds of characters of JSON): while the run goes the
    // conversation shows a failed step, collapsed, that names the tool; the check then sends the
    // model back, and its note and the rejected reply fold into one line. Never is the raw call
    // the agent's message.
    await page.goto(baseUrl);
    await page.evaluate(() => {
      window.__steps = [];
      window.__agent = [];
      new MutationObserver(() => {
        for (const step of document.querySelectorAll('[data-testid="text-call"]')) {
          window.__steps.push({ summary: step.querySelector("summary")?.textContent ?? "", open: step.open });
        }
        for (const m of document.querySelectorAll('[data-testid="message-agent"]')) window.__agent.push(m.textContent);
      }).observe(document.body, { subtree: true, childList: true, characterData: true });
    });
    await send(page, "textcall write the tests");
    await lastAgent(page).filter({ hasText: "echo: textcall write the tests" }).waitFor({ timeout: 20000 });
    await page.getByTestId("send").waitFor({ timeout: 20000 });
    const steps = await page.evaluate(() => window.__steps);
    check("a failed step naming the tool", steps.some((s) => s.summary.includes("write_file") && /written as text, not run/.test(s.summary)), steps.slice(0, 3));
    check("collapsed", steps.every((s) => !s.open));
    const agent = await page.evaluate(() => window.__agent);
    check("no agent message ever held the raw call", agent.every((text) => !text.includes("tool_call") && !text.includes("assert pal")), agent.slice(-3));
    const fold = page.getByTestId("check-fold").last();
    await fold.locator("summary").click();
    const rules = await fold.getByTestId("check-rule").allInnerTexts();
    check("the check's note folded, naming the call written as text", rules.includes("call.as_text"), rules);
    await shot(page, "text-call");
  },

  async outcome(page) {
    // A run that ends without its deliverable, or with an error, says so under the header.
    await page.goto(baseUrl);
    await send(page, "save it to /mnt/user-data/outputs/never.md");
    const missing = page.locator('[data-testid="run-outcome"][data-status="not delivered"]');
    await missing.waitFor({ timeout: 20000 });
    const said = await missing.innerText();
    check("not delivered, with what is missing", said.startsWith("Not delivered: the completion check still finds") && said.includes("never.md"), said);
    await shot(page, "not-delivered");
    await page.reload();
    await missing.waitFor({ timeout: 15000 });
    check("still said after a reload", true);
    await send(page, "fail now");
    const failed = page.locator('[data-testid="run-outcome"][data-status="failed"]');
    await failed.waitFor({ timeout: 15000 });
    check("a failed run says so", (await failed.innerText()).includes("broke on purpose"), await failed.innerText());
    await send(page, "hello there");
    await lastAgent(page).filter({ hasText: "until the answer is complete." }).waitFor({ timeout: 15000 });
    await page.getByTestId("send").waitFor();
    check("a run that answered shows no failure", (await page.getByTestId("run-outcome").count()) === 0);
  },

  async chinese(page) {
    // A request in Chinese: the harness's own words on the page are in Chinese (the folded checks,
    // the outcome); a model that cannot be called (after its retry) fails the run visibly.
    await page.goto(baseUrl);
    await send(page, "请保存到 /mnt/user-data/outputs/never-zh.md");
    const missing = page.locator('[data-testid="run-outcome"][data-status="not delivered"]');
    await missing.waitFor({ timeout: 20000 });
    const said = await missing.innerText();
    check("not delivered, said in Chinese", said.startsWith("未交付：完成检查仍发现") && said.includes("never-zh.md"), said);
    const line = await page.getByTestId("check-line").last().innerText();
    check("the checks' line in Chinese", /^已检查：\d+ (个问题|条提示)，还剩/.test(line), line);
    await page.getByTestId("check-line").last().click();
    const body = await page.getByTestId("check-body").last().innerText();
    check("its labels in Chinese", body.includes("已发给智能体") && body.includes("运行结束时仍存在的问题"), body.slice(0, 200));
    await shot(page, "chinese-not-delivered");
    await send(page, "失败 请再试一次");
    const failed = page.locator('[data-testid="run-outcome"][data-status="failed"]');
    await failed.waitFor({ timeout: 20000 });
    check("a failed model call fails the run, in Chinese", (await failed.innerText()) === "失败：无法调用模型（原因见回复）", await failed.innerText());
    const reply = await lastAgent(page).innerText();
    check("the reply says why, in Chinese", reply.includes("错误：模型调用失败") && reply.includes("broke on purpose"), reply);
    await shot(page, "chinese-failed");
  },

  async cjk(page) {
    // Chinese in the page is drawn with real glyphs, not tofu: each character of the answer is cut
    // out of a screenshot; distinct characters must give distinct ink patterns (without a CJK font
    // Chromium draws every one of them as the same empty box).
    await page.goto(baseUrl);
    const glyphs = "春夏秋冬山水风雨";
    await send(page, `${glyphs} 你好`);
    const answer = lastAgent(page).locator(".message-text");
    await answer.filter({ hasText: `echo: ${glyphs}` }).waitFor({ timeout: 15000 });
    await page.getByTestId("send").waitFor();
    const boxes = await answer.evaluate((el, text) => {
      const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        const at = node.data.indexOf(text);
        if (at < 0) continue;
        return [...text].map((_, i) => {
          const range = document.createRange();
          range.setStart(node, at + i);
          range.setEnd(node, at + i + 1);
          const box = range.getBoundingClientRect();
          return { x: Math.floor(box.x), y: Math.floor(box.y), width: Math.ceil(box.width) + 1, height: Math.ceil(box.height) + 1 };
        });
      }
      return null;
    }, glyphs);
    check("each character has a box on the page", boxes && boxes.every((b) => b.width > 4 && b.height > 4), boxes);
    const cuts = [];
    for (const clip of boxes) cuts.push((await page.screenshot({ clip })).toString("base64"));
    // Each cut as a mask of its dark pixels; two characters differ by the share of their ink not shared.
    const measured = await page.evaluate(async (pngs) => {
      const masks = [];
      for (const png of pngs) {
        const img = new Image();
        img.src = `data:image/png;base64,${png}`;
        await img.decode();
        const canvas = new OffscreenCanvas(img.width, img.height);
        const ctx = canvas.getContext("2d");
        ctx.drawImage(img, 0, 0);
        const { data } = ctx.getImageData(0, 0, img.width, img.height);
        const mask = [];
        for (let i = 0; i < data.length; i += 4) mask.push(0.3 * data[i] + 0.59 * data[i + 1] + 0.11 * data[i + 2] < 128);
        masks.push(mask);
      }
      const ink = masks.map((m) => m.filter(Boolean).length);
      let closest = 1;
      for (let a = 0; a < masks.length; a++) {
        for (let b = a + 1; b < masks.length; b++) {
          const n = Math.min(masks[a].length, masks[b].length);
          let either = 0, differ = 0;
          for (let i = 0; i < n; i++) {
            if (masks[a][i] || masks[b][i]) either++;
            if (masks[a][i] !== masks[b][i]) differ++;
          }
          closest = Math.min(closest, either ? differ / either : 0);
        }
      }
      return { ink, closest: Math.round(closest * 100) / 100 };
    }, cuts);
    check("every character leaves ink", measured.ink.every((n) => n > 0), measured.ink);
    const fix = "no CJK font? scripts/install-system.sh installs one (fonts-wqy-microhei) as root";
    check("distinct characters are drawn as distinct glyphs, not one box", measured.closest >= 0.25, { ...measured, fix });
    await shot(page, "cjk");
  },

  async channels(page) {
    // The gateway has WeCom enabled against an address that refuses connections (it fails to
    // start), and Bark enabled against one too (it runs until a push fails).
    await page.goto(baseUrl);
    await page.getByTestId("settings-open").click();
    const dialog = page.getByTestId("settings");
    await dialog.getByTestId("settings-tab-channels").click();
    const row = (name) => dialog.locator(`[data-testid="channel"][data-channel="${name}"]`);
    await row("wecom").waitFor();
    const states = await dialog.getByTestId("channel").evaluateAll((els) => els.map((e) => [e.dataset.channel, e.dataset.state]));
    check("every platform listed", states.length === 8 && states[0][0] === "wecom", states);
    check("failed channel with its reason", (await row("wecom").getAttribute("data-state")) === "failed" &&
      (await row("wecom").getByTestId("channel-error").innerText()).includes("Connection"), await row("wecom").innerText());
    check("no secret shown", !(await dialog.innerText()).includes("wecom-secret-value"));
    check("unconfigured channel", (await row("telegram").innerText()).includes("not configured"));
    check("bark running", (await row("bark").getAttribute("data-state")) === "running");
    check("summary", (await dialog.getByTestId("channels-summary").innerText()).includes("1 of 2 configured channels working"));
    await shot(page, "channels");
    await page.keyboard.press("Escape");
    // A run ends; its push fails; the refreshed tab says Bark has trouble and why.
    await send(page, "hello");
    await lastAgent(page).waitFor();
    await page.getByTestId("send").waitFor();
    await page.getByTestId("settings-open").click();
    await dialog.getByTestId("settings-tab-channels").click();
    for (let i = 0; i < 50 && (await row("bark").getAttribute("data-state")) !== "degraded"; i++) {
      await page.waitForTimeout(200);
      await dialog.getByTestId("channels-reload").click();
    }
    check("bark failing after a push", (await row("bark").getAttribute("data-state")) === "degraded" &&
      (await row("bark").innerText()).includes("last push failed"), await row("bark").innerText());
    await shot(page, "channels-bark");
  },
  async trace(page) {
    // The trace panel is open before the run, and fills in when the run finishes.
    await page.goto(baseUrl);
    await page.getByTestId("trace-toggle").click();
    const panel = page.getByTestId("trace-panel");
    await panel.waitFor();
    await send(page, "shell please");
    await lastAgent(page).filter({ hasText: "ran both commands" }).waitFor({ timeout: 20000 });
    const steps = panel.getByTestId("trace-step");
    await steps.nth(5).waitFor({ timeout: 15000 });
    const kinds = await steps.evaluateAll((els) => els.map((e) => e.dataset.kind));
    check("steps in order", kinds.join(",") === "input,model,tool,model,tool,model", kinds);
    const numbers = await panel.locator(".trace-num").allInnerTexts();
    check("steps numbered", numbers.join(",") === "1,2,3,4,5,6", numbers);
    const total = await panel.getByTestId("trace-total-tokens").innerText();
    check("total tokens", /6 steps · tokens in [1-9][\d.k]* · out [1-9]/.test(total), total);
    await shot(page, "steps");
    // Next opens the model call: its tokens in and out.
    await panel.getByTestId("trace-next").click();
    const tokens = await steps.nth(1).getByTestId("trace-tokens").innerText();
    check("model call tokens", /tokens in [1-9]\d* · out [1-9]\d*/.test(tokens), tokens);
    // Next: the bash command that wrote a file.
    await panel.getByTestId("trace-next").click();
    const wrote = steps.nth(2);
    check("bash command", (await wrote.getByTestId("trace-command").innerText()).includes("> /mnt/user-data/outputs/shell.txt"));
    const okExit = wrote.getByTestId("trace-exit-code");
    check("exit code 0", (await okExit.innerText()).includes("exit code 0") && !(await okExit.getAttribute("class")).includes("nonzero"));
    check("stdout", (await wrote.getByTestId("trace-stdout").innerText()).includes("wrote shell.txt"));
    const file = await wrote.getByTestId("trace-file").innerText();
    check("file created", file.includes("created") && file.includes("/mnt/user-data/outputs/shell.txt"), file);
    await wrote.getByTestId("trace-open-file").click(); // the files panel previews it
    await page.getByTestId("preview").filter({ hasText: "shell-made" }).waitFor();
    check("file opened from the trace", true);
    await shot(page, "bash-wrote-file");
    // Two more: the command that failed, its exit code highlighted, stdout and stderr apart.
    await panel.getByTestId("trace-next").click();
    await panel.getByTestId("trace-next").click();
    check("position", (await panel.getByTestId("trace-position").innerText()) === "5 / 6");
    const failed = steps.nth(4);
    const badExit = failed.getByTestId("trace-exit-code");
    check("non-zero exit code highlighted", (await badExit.innerText()).includes("exit code 2") && (await badExit.getAttribute("class")).includes("nonzero"));
    check("failed stdout", (await failed.getByTestId("trace-stdout").innerText()).trim() === "checking");
    const stderr = await failed.getByTestId("trace-stderr").innerText();
    check("failed stderr", stderr.includes("no-such-dir") && !stderr.includes("checking"), stderr);
    await shot(page, "bash-failed");
    await panel.getByTestId("trace-prev").click();
    check("previous", (await panel.getByTestId("trace-position").innerText()) === "4 / 6");
    // The chat's tool cards agree with the trace: the failed command says so, with its exit code.
    const statuses = await page.getByTestId("tool-status").allInnerTexts();
    check("tool cards: done, then failed with the exit code", statuses.slice(-2).join(" | ") === "done | failed · exit 2", statuses);
  },
  async liveSite(page) {
    // A request typed as a user types it; the agent builds a page, serves it in its sandbox, and
    // the Preview tab shows the running server live, its button clicked in the sandboxed frame.
    const seconds = Number(process.env.LIVE_SECONDS || 900);
    page.setDefaultTimeout(30000);
    await page.goto(baseUrl, { timeout: 60000 });
    await page.getByTestId("input").waitFor({ timeout: 60000 });
    await page.getByTestId("input").fill(process.env.LIVE_REQUEST);
    await page.getByTestId("input").press("Enter");
    await page.getByTestId("stop").waitFor({ timeout: 60000 });
    await page.getByTestId("send").waitFor({ timeout: seconds * 1000 });
    checks.thread = new URL(page.url()).searchParams.get("thread");
    await shot(page, "conversation");
    await page.getByTestId("preview-toggle").click();
    const select = page.getByTestId("preview-select");
    await select.locator("option").first().waitFor({ state: "attached" });
    await page.waitForFunction(() => [...document.querySelectorAll('[data-testid="preview-select"] option')]
      .some((o) => o.textContent.startsWith("server: ")), null, { timeout: 30000 }).catch(() => undefined);
    const options = await select.locator("option").allInnerTexts();
    const server = options.find((o) => o.startsWith("server: "));
    check("a server the agent started is listed", !!server, options);
    await select.selectOption({ label: server });
    const frame = page.frameLocator('[data-testid="preview-frame"]');
    const button = frame.locator("button, input[type=button], input[type=submit]").first();
    await button.waitFor({ timeout: 30000 });
    check("the page is live in the frame with a button", true);
    const before = await frame.locator("body").innerText();
    await button.click();
    await page.waitForTimeout(500);
    const after = await frame.locator("body").innerText();
    checks["the click changed the page"] = { changed: before !== after, before: before.slice(0, 200), after: after.slice(0, 200) };
    await shot(page, "live");
  },
  async preview(page) {
    // The Preview tab: a page the agent wrote (hostile: it tries to read the API key, the cookies, the
    // parent page and the API) and a server running in the thread's jail, each live in a sandboxed frame.
    const thread = process.env.PREVIEW_THREAD;
    page.setDefaultTimeout(30000);
    await page.goto(baseUrl, { timeout: 60000 });
    await page.evaluate((key) => localStorage.setItem("herdsman.apiKey", key), process.env.WEB_API_KEY);
    await page.goto(`${baseUrl}/?thread=${thread}`, { timeout: 60000 });
    await page.getByTestId("preview-toggle").click();
    const select = page.getByTestId("preview-select");
    await select.locator("option", { hasText: "outputs/evil/index.html" }).waitFor({ state: "attached" });
    const options = await select.locator("option").allInnerTexts();
    check("servers and pages listed", options.some((o) => o.startsWith("server: port 8000")) && options.some((o) => o.includes("outputs/evil/index.html")), options);
    await select.selectOption({ label: "page: outputs/evil/index.html" });
    const frame = page.frameLocator('[data-testid="preview-frame"]');
    await frame.locator("#result").filter({ hasText: "api" }).waitFor({ timeout: 15000 });
    const stolen = JSON.parse(await frame.locator("#result").innerText());
    const src = await page.getByTestId("preview-frame").getAttribute("src");
    check("the page runs on the preview origin", new URL(src).origin !== new URL(baseUrl).origin, src.split("/t/")[0]);
    check("frame sandboxed without allow-same-origin", !(await page.getByTestId("preview-frame").getAttribute("sandbox")).includes("allow-same-origin"));
    check("the page cannot read the key", stolen.key === "blocked" && stolen.parent === "blocked", stolen);
    check("the page has no cookies", stolen.cookie === "blocked", stolen);
    check("the page cannot call the API", stolen.api === "blocked", stolen);
    check("the page's origin is opaque", stolen.origin === "null", stolen);
    await shot(page, "hostile-page");
    await select.selectOption({ label: options.find((o) => o.startsWith("server: port 8000")) });
    await frame.locator("#count").waitFor({ timeout: 15000 });
    await frame.locator("#inc").click();
    await frame.locator("#inc").click();
    check("the server's page runs its script", (await frame.locator("#count").innerText()) === "2");
    const opened = await page.getByTestId("preview-open").getAttribute("href");
    check("open in a new tab: the preview origin", opened.includes(`/preview/${thread}/8000/`) && !opened.startsWith(baseUrl), opened.split("/t/")[0]);
    await shot(page, "server");
    await page.getByTestId("preview-reload").click();
    await frame.locator("#count").filter({ hasText: "0" }).waitFor({ timeout: 15000 });
    check("reload", true);
  },
};

scenarios.proposals = async (page) => {
  // Two skills proposed from the user's runs (seeded by the test): one reviewed, edited and
  // accepted (installed under its new name), the other declined.
  const api = async (path) => (await page.request.get(`${baseUrl}${path}`)).json();
  await page.goto(baseUrl);
  await page.getByTestId("settings-open").click();
  const dialog = page.getByTestId("settings");
  await dialog.getByTestId("settings-tab-skills").click();
  const rows = dialog.getByTestId("proposal");
  await rows.nth(1).waitFor();
  const names = await rows.evaluateAll((els) => els.map((e) => e.dataset.proposal));
  check("proposals listed", names.length === 2, names);
  const csv = rows.filter({ hasText: "sales.csv" });
  const params = await csv.getByTestId("proposal-parameters").innerText();
  check("parameters shown", params.includes("column (e.g. amount)"), params);
  await csv.getByTestId("proposal-review").click();
  const md = csv.getByTestId("proposal-skill-md");
  await md.waitFor();
  const text = await md.inputValue();
  check("SKILL.md and its script shown", text.includes("## Steps") && (await csv.getByTestId("proposal-script").count()) === 1, text.slice(0, 80));
  const name = await csv.getAttribute("data-proposal");
  check("nothing installed before accept", !(await api("/api/skills")).skills.some((s) => s.name === name));
  await md.fill(text.replace(`name: ${name}`, "name: csv-column-total"));
  await shot(page, "review");
  await csv.getByTestId("proposal-accept").click();
  await dialog.locator('[data-testid="skill"][data-skill="csv-column-total"]').waitFor();
  const skills = (await api("/api/skills")).skills.map((s) => s.name);
  check("accepted as edited", skills.includes("csv-column-total") && !skills.includes(name), skills);
  const content = (await api("/api/skills/csv-column-total")).content;
  check("its script path follows the new name", content.includes("/mnt/skills/custom/csv-column-total/scripts/summarize.py"));
  await dialog.getByTestId("proposal").first().getByTestId("proposal-decline").click();
  await dialog.getByTestId("skill-proposals").waitFor({ state: "detached" });
  check("declined", (await api("/api/skills/proposals")).proposals.length === 0);
  await shot(page, "done");
};

async function main() {
  mkdirSync(artifacts, { recursive: true });
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS });
  const consoleErrors = [];
  let page;
  try {
    page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
    page.setDefaultTimeout(10000);
    page.setDefaultNavigationTimeout(60000);  // a loaded 2-core machine took over 10 s to load the page
    page.on("pageerror", (e) => consoleErrors.push(String(e)));
    const run = scenarios[scenario];
    if (!run) throw new Error(`no scenario ${scenario}; one of ${Object.keys(scenarios).join(", ")}`);
    await run(page);
    if (consoleErrors.length) throw new Error(`page errors: ${consoleErrors.join("; ")}`);
    console.log(JSON.stringify({ ok: true, scenario, checks, screenshots }));
  } catch (error) {
    if (page) await shot(page, "failure").catch(() => {});
    console.log(JSON.stringify({ ok: false, scenario, checks, screenshots, error: String(error?.stack ?? error) }));
    process.exitCode = 1;
  } finally {
    await browser.close();
  }
}

await main();
