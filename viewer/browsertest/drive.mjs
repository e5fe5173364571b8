// drive.mjs runs one scenario against a tapebox view page in Debian's chromium through
// playwright-core and prints what it saw as one JSON object on stdout; the Go tests in
// package viewer decide what is right. Usage: node drive.mjs SCENARIO JSON-ARGS
import { chromium } from "playwright-core";
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [scenario, rawArgs] = process.argv.slice(2);
const args = JSON.parse(rawArgs || "{}");
const executablePath = process.env.TAPEBOX_CHROMIUM || "/usr/bin/chromium";

const browser = await chromium.launch({
  executablePath,
  headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
});
const out = { scenario, console: [], pageErrors: [], requests: [], dialogs: [] };
try {
  const context = await browser.newContext({ viewport: args.viewport || { width: 1280, height: 800 }, colorScheme: args.colorScheme || "light" });
  const page = await context.newPage();
  page.on("console", (m) => out.console.push(m.type() + ": " + m.text()));
  page.on("pageerror", (e) => out.pageErrors.push(String(e)));
  page.on("dialog", (d) => { out.dialogs.push(d.message()); d.dismiss(); });
  page.on("request", (r) => { if (!r.url().startsWith("file:") && !r.url().startsWith("data:") && !r.url().startsWith("blob:")) out.requests.push(r.url()); });
  const url = pathToFileURL(args.page).href + (args.fragment || "");
  const shot = async (name) => {
    if (!args.shots) return;
    const p = path.join(args.shots, name + ".png");
    await page.screenshot({ path: p, fullPage: false });
    (out.shots ||= []).push(p);
  };
  const ready = async () => {
    await page.waitForFunction(() => document.body.dataset.ready, null, { timeout: 60000 });
    out.ready = await page.evaluate(() => document.body.dataset.ready);
    out.fatal = await page.evaluate(() => document.getElementById("fatal").hidden ? "" : document.getElementById("fatal").textContent);
  };
  const detailFor = async (sel) => {
    await page.waitForFunction((s) => document.getElementById("detail-pane").dataset.step === s, sel, { timeout: 20000 });
  };

  if (scenario === "basic") {
    await page.goto(url);
    await ready();
    out.laneLabels = await page.$$eval(".lane-label", (ls) => ls.map((l) => ({ thread: l.dataset.thread, side: l.dataset.side, text: l.textContent })));
    out.canvasLanes = Number(await page.getAttribute("#timeline", "data-lanes"));
    out.canvasSteps = Number(await page.getAttribute("#timeline", "data-steps"));
    out.listCount = await page.textContent("#list-count");
    out.rowsInDOM = await page.$$eval(".step-row", (r) => r.length);
    out.header = await page.textContent("#meta");
    out.telemetry = await page.evaluate(() => document.getElementById("telemetry-wrap").hidden ? "" : document.getElementById("telemetry-label").textContent);
    await shot("overview");
    // click the row of the asked-for step and read its tool results
    await page.click(`.step-row[data-thread="${args.thread}"][data-index="${args.index}"]`);
    await detailFor(`${args.thread}/${args.index}`);
    out.detailTitle = await page.textContent("#detail-pane h2");
    out.results = await page.$$eval("#detail-pane .call", (cs) => cs.map((c) => ({ name: c.querySelector(".name").textContent, result: c.querySelector("pre.result").textContent, input: c.querySelector("pre.input").textContent })));
    out.detailText = await page.textContent("#detail-pane");
    out.hash = await page.evaluate(() => location.hash);
    out.chunkPlots = await page.$$eval("#detail-pane canvas.chunkplot", (c) => c.length);
    await shot("step");
    // j moves to the next step in request order
    await page.focus("#list");
    await page.keyboard.press("j");
    await page.waitForFunction((h) => location.hash !== h, out.hash);
    out.afterJ = await page.evaluate(() => location.hash);
    await page.keyboard.press("k");
    await page.waitForFunction((h) => location.hash === h, out.hash);
    out.afterK = await page.evaluate(() => location.hash);
    // a bar on the timeline opens its step
    if (args.barThread) {
      await page.click("#zoom-fit");
      const pos = await page.evaluate((a) => window.tapeboxView.barCenter("rec", a.barThread, a.barIndex), args);
      await page.click("#timeline", { position: pos });
      await detailFor(`${args.barThread}/${args.barIndex}`);
      out.barClicked = await page.textContent("#detail-pane h2");
    }
    // a fragment opens its step
    if (args.linkTo) {
      await page.goto(pathToFileURL(args.page).href + "#step=" + args.linkTo);
      await page.reload();
      await ready();
      await detailFor(args.linkTo);
      out.linked = await page.textContent("#detail-pane h2");
    }
    // search for a word of a tool result: only steps holding it stay in the list
    if (args.search) {
      await page.fill("#search", args.search);
      await page.waitForFunction(() => /match/.test(document.getElementById("search-status").textContent), null, { timeout: 20000 });
      out.searchStatus = await page.textContent("#search-status");
      out.searchRows = await page.$$eval(".step-row", (r) => r.map((x) => x.dataset.thread + "/" + x.dataset.index));
      out.searchCount = await page.textContent("#list-count");
    }
    // dark mode and a narrow window
    await page.emulateMedia({ colorScheme: "dark" });
    out.darkBg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    await page.setViewportSize({ width: 480, height: 800 });
    await page.waitForTimeout(100);
    out.narrowOverflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    await shot("narrow-dark");
  } else if (scenario === "load") {
    await page.goto(url);
    await ready();
    await page.keyboard.press("j");
    await page.fill("#search", "x");
    await page.waitForTimeout(300);
    out.listCount = await page.textContent("#list-count");
    out.lanes = await page.$$eval(".lane-label", (ls) => ls.length);
    out.rows = await page.$$eval(".step-row", (r) => r.length);
    out.nodes = await page.evaluate(() => document.getElementsByTagName("*").length);
    await page.fill("#search", "");
    await page.waitForTimeout(300);
    await page.$eval("#list", (l) => { l.scrollTop = l.scrollHeight; });
    await page.waitForTimeout(200);
    out.lastRow = await page.$$eval(".step-row .num", (r) => r.length ? r[r.length - 1].textContent : "");
    out.rowsAtEnd = await page.$$eval(".step-row", (r) => r.length);
  } else if (scenario === "diff") {
    await page.goto(url);
    await ready();
    out.verdict = await page.textContent("#verdict");
    out.comparePane = await page.textContent("#compare-pane");
    out.diffRows = await page.$$eval(".step-row .flag", (f) => f.map((x) => x.closest(".step-row").dataset.thread + "/" + x.closest(".step-row").dataset.index));
    out.laneLabels = await page.$$eval(".lane-label", (ls) => ls.map((l) => l.dataset.side + ":" + l.dataset.thread));
    const link = await page.$("#differences button");
    if (link) {
      await link.click();
      await page.waitForFunction(() => document.querySelector("#detail-pane .call.differs"), null, { timeout: 20000 });
      out.differing = await page.$$eval("#detail-pane .call.differs", (cs) => cs.map((c) => ({
        call: c.dataset.call,
        deleted: [...c.querySelectorAll("del")].map((d) => d.textContent),
        inserted: [...c.querySelectorAll("ins")].map((d) => d.textContent),
        results: [...c.querySelectorAll("pre.result")].map((p) => p.textContent),
      })));
      out.detailStep = await page.evaluate(() => document.getElementById("detail-pane").dataset.step);
      await page.$eval("#detail-pane .call.differs", (e) => e.scrollIntoView({ block: "center" }));
      await shot("diff");
    }
    out.endState = await page.$$eval("#end-state li", (ls) => ls.map((l) => l.textContent));
    if (args.repThread) {
      await page.click("#zoom-fit");
      const pos = await page.evaluate((a) => window.tapeboxView.barCenter("rep", a.repThread, a.repIndex), args);
      await page.click("#timeline", { position: pos });
      await detailFor(`replay/${args.repThread}/${args.repIndex}`);
      out.repTitle = await page.textContent("#detail-pane h2");
      out.repResults = await page.$$eval("#detail-pane .call pre.result", (ps) => ps.map((p) => p.textContent));
      out.repHash = await page.evaluate(() => location.hash);
    }
  } else if (scenario === "pair") {
    await page.goto(url);
    await ready();
    out.verdict = await page.textContent("#verdict");
    out.comparePane = await page.textContent("#compare-pane");
    out.header = await page.textContent("#meta");
    if (args.search) {
      await page.fill("#search", args.search);
      await page.waitForFunction(() => /match/.test(document.getElementById("search-status").textContent), null, { timeout: 20000 });
      out.searchStatus = await page.textContent("#search-status");
      out.listCount = await page.textContent("#list-count");
      out.replayMatches = await page.$$eval("#search-replay button", (bs) => bs.map((b) => b.textContent));
      const first = await page.$("#search-replay button");
      if (first) {
        const key = await first.getAttribute("data-step");
        await first.click();
        await detailFor(key);
        out.repTitle = await page.textContent("#detail-pane h2");
      }
      await shot("pair-search");
    }
  } else if (scenario === "xss") {
    await page.goto(url);
    await ready();
    await page.click(`.step-row[data-thread="${args.thread}"][data-index="${args.index}"]`);
    await detailFor(`${args.thread}/${args.index}`);
    await page.waitForTimeout(300);
    out.pwned = await page.evaluate(() => window.__pwned ?? null);
    out.images = await page.evaluate(() => document.images.length);
    out.scripts = await page.evaluate(() => document.scripts.length);
    out.results = await page.$$eval("#detail-pane pre.result", (ps) => ps.map((p) => p.textContent));
    out.detailHTMLHasTag = await page.evaluate(() => /<img|<script/i.test(document.getElementById("detail-pane").innerHTML.replace(/&lt;/g, "")));
    await shot("xss");
  } else if (scenario === "bench") {
    const cdp = await context.newCDPSession(page);
    await cdp.send("Performance.enable");
    const runs = [];
    for (let r = 0; r < (args.runs || 3); r++) {
      const t0 = Date.now();
      await page.goto(url, { waitUntil: "commit", timeout: 120000 });
      await page.waitForFunction(() => document.body.dataset.ready, null, { timeout: 120000, polling: 20 });
      const ms = Date.now() - t0;
      const fatal = await page.evaluate(() => document.getElementById("fatal").hidden ? "" : document.getElementById("fatal").textContent);
      const nav = await page.evaluate(() => { const n = performance.getEntriesByType("navigation")[0]; return { domContentLoaded: n.domContentLoadedEventEnd, load: n.loadEventEnd }; });
      // open one step's detail, as a first look does
      await page.click(".step-row");
      await page.waitForFunction(() => document.getElementById("detail-pane").dataset.step, null, { timeout: 60000 });
      const { metrics } = await cdp.send("Performance.getMetrics");
      const m = Object.fromEntries(metrics.map((x) => [x.name, x.value]));
      const heap = await cdp.send("Runtime.getHeapUsage");
      runs.push({ ms, fatal, nav, jsHeapUsed: m.JSHeapUsedSize, jsHeapTotal: m.JSHeapTotalSize, nodes: m.Nodes, heapUsed: heap.usedSize, heapTotal: heap.totalSize });
    }
    out.runs = runs;
    // The renderer's resident memory, from the kernel: what the tab costs the machine.
    const bcdp = await browser.newBrowserCDPSession();
    try {
      const info = await bcdp.send("SystemInfo.getProcessInfo");
      out.processes = info.processInfo.map((p) => {
        let rss = null;
        try { const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${p.id}/status`, "utf8")); if (m) rss = Number(m[1]) * 1024; } catch (_) { /* gone */ }
        return { type: p.type, pid: p.id, rss };
      });
    } catch (e) { out.processError = String(e); }
  } else {
    throw new Error("unknown scenario " + scenario);
  }
} catch (e) {
  out.error = String(e && e.stack || e);
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(out) + "\n");
