// The browser half of benchmarks/everyday.py: each request of the plan typed into the web UI, in
// a new thread, on Debian's Chromium (headless) driven by playwright-core from web/node_modules.
//
//   node benchmarks/everyday_ui.mjs PLAN.json
//
// The plan: {url, web_package, chromium, max_seconds, requests: [{id, text, thread_id?, uploads:
// [{name, mime, base64}]}]}. A request with a thread_id opens that thread (its workspace files
// are in place); the others start on a new page. Its files are uploaded through the page, then
// the text is typed and sent. Prints one JSON line per request, as it ends:
// {id, thread_id, first_text_s, total_s, outcome, visible, answer_shown, checked, malformed, errors, error}
// where the times are from the Enter that sent the request to the first agent text on screen and
// to the Send button back (the run ended), `visible` the conversation's messages as shown (not
// those folded into a "checked" line), `outcome` the run's status line (done when none).
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";

const plan = JSON.parse(readFileSync(process.argv[2], "utf8"));
const { chromium } = createRequire(plan.web_package)("playwright-core");
const ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run", "--disable-sync"];

/** Installed in the page before the request is typed: stamps (performance.now()) of the Enter
 * that sends it, the first agent text shown, and the end of the run (Stop seen, then Send back). */
function watch() {
  const t = { sent: null, firstText: null, sawStop: false, ended: null };
  window.__everyday = t;
  document.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && t.sent === null && e.target?.dataset?.testid === "input") t.sent = performance.now();
  }, true);
  const look = () => {
    if (t.sent === null) return;
    if (t.firstText === null) {
      for (const el of document.querySelectorAll('[data-testid="message-agent"] .message-text')) {
        if (el.textContent.trim()) { t.firstText = performance.now(); break; }
      }
    }
    if (document.querySelector('[data-testid="stop"]')) t.sawStop = true;
    else if (t.sawStop && t.ended === null && document.querySelector('[data-testid="send"]')) t.ended = performance.now();
  };
  new MutationObserver(look).observe(document.body, { subtree: true, childList: true, characterData: true, attributes: true });
}

/** What the page shows once the run ended. */
function shown() {
  const visible = [...document.querySelectorAll('[data-testid="messages"] [data-testid^="message-"]')]
    .filter((el) => !el.closest('[data-testid="check-fold"]'))
    .map((el) => ({ role: el.dataset.testid.replace("message-", ""), text: el.innerText }));
  const outcome = document.querySelector('[data-testid="run-outcome"]');
  const agents = visible.filter((m) => m.role === "agent" && m.text.trim());
  return {
    visible,
    answer_shown: agents.length ? agents[agents.length - 1].text : "",
    outcome: outcome ? outcome.dataset.status : "done",
    outcome_text: outcome ? outcome.innerText : "",
    checked: [...document.querySelectorAll('[data-testid="check-line"]')].map((el) => el.innerText),
    malformed: document.querySelectorAll('[data-testid="malformed-call"]').length,
    errors: [...document.querySelectorAll('[data-testid="errors"]')].map((el) => el.innerText).filter((s) => s.trim()),
  };
}

const seconds = (a, b) => (a === null || b === null ? null : Math.round((b - a) / 100) / 10);

async function one(browser, request, index, total) {
  const out = { id: request.id, thread_id: request.thread_id ?? null, first_text_s: null, total_s: null, error: null };
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  try {
    await page.goto(request.thread_id ? `${plan.url}/?thread=${request.thread_id}` : plan.url);
    await page.getByTestId("input").waitFor({ timeout: 60000 });
    for (const file of request.uploads) {
      await page.getByTestId("file-input").setInputFiles({ name: file.name, mimeType: file.mime, buffer: Buffer.from(file.base64, "base64") });
      await page.getByTestId("notice").filter({ hasText: file.name }).waitFor({ timeout: 60000 });
    }
    await page.evaluate(watch);
    await page.getByTestId("input").fill(request.text);
    await page.getByTestId("input").press("Enter");
    process.stderr.write(`[${index + 1}/${total}] ${request.id}: sent\n`);
    try {
      await page.waitForFunction(() => window.__everyday.ended !== null, null, { timeout: plan.max_seconds * 1000, polling: 250 });
    } catch {
      out.error = `the run did not end within ${plan.max_seconds} s; stopped`;
      await page.getByTestId("stop").click({ timeout: 5000 }).catch(() => undefined);
      await page.getByTestId("send").waitFor({ timeout: 60000 }).catch(() => undefined);
    }
    const t = await page.evaluate(() => window.__everyday);
    out.first_text_s = seconds(t.sent, t.firstText);
    out.total_s = seconds(t.sent, t.ended);
    out.thread_id = new URL(page.url()).searchParams.get("thread") ?? out.thread_id;
    await page.waitForTimeout(1000); // the thread's final values (the outcome line, the folds) are read after the stream ends
    Object.assign(out, await page.evaluate(shown));
  } catch (e) {
    out.error = out.error ?? String(e?.message ?? e).split("\n")[0];
  } finally {
    await page.close();
  }
  process.stderr.write(`[${index + 1}/${total}] ${request.id}: ${out.error ?? out.outcome} in ${out.total_s ?? "?"} s (first text ${out.first_text_s ?? "-"} s)\n`);
  return out;
}

const browser = await chromium.launch({ executablePath: plan.chromium, headless: true, args: ARGS });
try {
  for (const [i, request] of plan.requests.entries()) {
    console.log(JSON.stringify(await one(browser, request, i, plan.requests.length)));
  }
} finally {
  await browser.close();
}
