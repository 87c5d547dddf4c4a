// Browser scenarios for the web UI, driven by Playwright (playwright-core) on Debian's Chromium.
//
//   node tests/web/e2e.mjs SCENARIO GATEWAY_URL ARTIFACTS_DIR
//
// Prints one JSON line {ok, scenario, checks, screenshots, error?} and exits 0 only when the scenario passed.
import { createRequire } from "node:module";
import { mkdirSync } from "node:fs";
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
    // A run that fails shows its error in the page, which stays usable.
    await send(page, "fail now");
    await page.getByTestId("errors").filter({ hasText: "broke on purpose" }).waitFor({ timeout: 15000 });
    check("run error shown", true);
    await shot(page, "run-error");
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
    await shot(page, "running");
    // A reload while they work: the page joins the run again and rebuilds the cards from its events.
    await page.reload();
    await page.getByTestId("subagent-card").nth(2).waitFor({ timeout: 15000 });
    check("cards after reload", (await page.getByTestId("subagent-card").count()) === 3);
    await page.locator('[data-testid="subagent-card"][data-status="completed"]').nth(2).waitFor({ timeout: 20000 });
    await lastAgent(page).filter({ hasText: "all three sub-agents reported" }).waitFor({ timeout: 15000 });
    check("all completed", true);
    await shot(page, "completed");
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

  async auth(page) {
    // A gateway with api_keys: without the key the page says what to do; with it, chat and previews work.
    await page.goto(baseUrl);
    await page.getByTestId("errors").filter({ hasText: "401" }).first().waitFor({ timeout: 10000 });
    check("asks for the key", (await page.getByTestId("errors").innerText()).includes("API key"));
    await page.locator(".settings summary").click();
    await page.locator('.settings input[type="password"]').fill(process.env.WEB_API_KEY);
    await Promise.all([page.waitForEvent("load"), page.locator(".settings button").click()]);
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
    await page.waitForTimeout(1500);
    check("no more steps", (await page.getByTestId("tool-call").count()) < 8);
    await shot(page, "stopped");
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
};

async function main() {
  mkdirSync(artifacts, { recursive: true });
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS });
  const consoleErrors = [];
  let page;
  try {
    page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
    page.setDefaultTimeout(10000);
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
