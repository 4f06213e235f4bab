#!/usr/bin/python3
"""The browser half of bench/dashboard.sh: opens a large job's page in
headless Chromium and prints how soon it is interactive and what each poll
moves. Prints figures only; asserts nothing. Run by bench/dashboard.sh, which
owns the grid and the job."""
import argparse
import json
import ssl
import statistics
import threading
import time
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.support.ui import WebDriverWait

POLL_S = 2.0  # the page's POLL_MS

# Resolves once the job page shows the summary and a full first page of tasks
# (or all of a smaller job's), with performance.now() at that frame.
INTERACTIVE = """
const [total, done] = [arguments[0], arguments[arguments.length - 1]];
const rows = Math.min(total, 50);
const ready = () => {
  const pace = document.getElementById('job-progress-text');
  const body = document.getElementById('tasks').tBodies[0];
  return pace && pace.textContent.includes('of ' + total + ' tasks') && body.rows.length === rows;
};
const start = arguments.length > 2 ? arguments[1] : null;
let t0 = 0;
const step = () => ready() ? done(performance.now() - t0) : requestAnimationFrame(step);
if (start) { t0 = performance.now(); location.hash = start; }
step();
"""

# Counts what the page's fetches receive (a cross-check of Resource Timing).
HOOK = """
window.__igBench = {requests: 0, notModified: 0, bodyBytes: 0};
const original = window.fetch;
window.fetch = async (...args) => {
  const res = await original(...args);
  window.__igBench.requests++;
  if (res.status === 304) window.__igBench.notModified++;
  res.clone().arrayBuffer().then((b) => { window.__igBench.bodyBytes += b.byteLength; });
  return res;
};
performance.setResourceTimingBufferSize(100000);
performance.clearResourceTimings();
"""

COLLECT = """
return performance.getEntriesByType('resource').filter((e) => e.name.includes('/v1/'))
    .map((e) => [e.name, e.transferSize, e.encodedBodySize]);
"""


def browser():
    opts = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--ignore-certificate-errors",
                "--window-size=1400,1100", "--disable-gpu"):
        opts.add_argument(arg)
    return webdriver.Chrome(service=Service(executable_path="/usr/bin/chromedriver"), options=opts)


def post(url, token, body):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # loopback, the coordinator's own CA: a bench only
    req = urllib.request.Request(url, data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"},
                                 method="POST" if body is not None else "GET")
    with urllib.request.urlopen(req, context=ctx) as res:
        return res.read()


def interactive_cold(driver, args):
    driver.get("about:blank")  # a new document, not a move within this one
    driver.get(args.url + "/#job/" + args.job)
    return driver.execute_async_script(INTERACTIVE, args.tasks)


def interactive_from_list(driver, args):
    driver.get("about:blank")
    driver.get(args.url + "/#jobs")
    WebDriverWait(driver, 30).until(lambda d: d.execute_script(
        "return document.querySelector('#jobs tbody tr') !== null"))
    return driver.execute_async_script(INTERACTIVE, args.tasks, "#job/" + args.job)


def measure_polls(driver, args, label, during=None):
    driver.execute_script(HOOK)
    stop = threading.Event()
    worker = threading.Thread(target=during, args=(stop,)) if during else None
    if worker:
        worker.start()
    time.sleep(args.polls * POLL_S)
    stop.set()
    if worker:
        worker.join()
    entries = driver.execute_script(COLLECT)
    hook = driver.execute_script("return window.__igBench;")
    polls = max(1, sum(1 for name, _, _ in entries if "/v1/jobs/%s?" % args.job in name))
    transfer = sum(t for _, t, _ in entries)
    body = sum(b for _, _, b in entries)
    per_request = [t for _, t, _ in entries]
    if args.verbose:
        for name, t, b in entries:
            print("  %s transfer %d body %d" % (name, t, b))
    print("per poll, %s: %d polls, %d requests (%d answered 304); transferSize %.1f KB per poll (request max %.1f KB), "
          "encoded body %.1f KB per poll; the page's fetch hook: %.1f KB of decoded body per request" % (
              label, polls, hook["requests"], hook["notModified"], transfer / polls / 1000,
              (max(per_request) if per_request else 0) / 1000, body / polls / 1000,
              hook["bodyBytes"] / max(1, hook["requests"]) / 1000),
          flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--token", required=True)
    p.add_argument("--job", required=True)
    p.add_argument("--tasks", type=int, required=True)
    p.add_argument("--polls", type=int, default=10)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--verbose", action="store_true", help="list every request measured")
    args = p.parse_args()

    whole = post(args.url + "/v1/jobs/" + args.job, args.token, None)
    served = []
    for _ in range(args.runs):
        t0 = time.monotonic()
        page = post(args.url + "/v1/jobs/" + args.job + "?offset=0&limit=50", args.token, None)
        served.append((time.monotonic() - t0) * 1000)
    print("the server answers one page (GET /v1/jobs/ID?offset=0&limit=50) in median %.0f ms" %
          statistics.median(served), flush=True)
    print("GET the whole job (every task, what the page polled before): %.1f KB; one page of 50 with the summary: "
          "%.1f KB" % (len(whole) / 1000, len(page) / 1000), flush=True)

    driver = browser()
    try:
        driver.get(args.url + "/")
        driver.execute_script("sessionStorage.setItem('idlegrid.token', arguments[0]);", args.token)
        cold = [interactive_cold(driver, args) for _ in range(args.runs)]
        warm = [interactive_from_list(driver, args) for _ in range(args.runs)]
        print("interactive (summary and first page drawn), cold load of #job/ID: median %.0f ms (runs %s)" % (
            statistics.median(cold), ", ".join("%.0f" % v for v in cold)), flush=True)
        print("interactive, from the job list to #job/ID: median %.0f ms (runs %s)" % (
            statistics.median(warm), ", ".join("%.0f" % v for v in warm)), flush=True)

        measure_polls(driver, args, "nothing changes")
        cancelled = [0]

        def end_tasks_on_screen(stop):
            while not stop.is_set():  # 5 tasks of the page on screen end every poll
                first = cancelled[0]
                post(args.url + "/v1/jobs/%s/cancel" % args.job, args.token,
                     {"taskIndices": list(range(first, first + 5))})
                cancelled[0] += 5
                stop.wait(POLL_S)

        measure_polls(driver, args, "5 tasks on the page end each poll", end_tasks_on_screen)
    finally:
        driver.quit()


if __name__ == "__main__":
    main()
