#!/usr/bin/python3
"""Drives the web dashboard in headless Chromium against a live coordinator.

Started by tests/e2e/dashboard_e2e_test.cc, which owns the grid (a real
coordinator and agent), submits the jobs and checks through the API what the
clicks did. This script only plays the user: it logs in with the token, reads
the pages and clicks. Every wait is on something the page shows, never a
fixed sleep. Exits 0 when every check held; otherwise prints why and exits 1.
Screenshots go to --artifacts; each path is printed on a "SCREENSHOT " line,
and downloads to --artifacts/downloads (emptied first).
"""
import argparse
import hashlib
import os
import re
import shutil
import sys

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import Select, WebDriverWait


class Failed(Exception):
    pass


def check(cond, message):
    if not cond:
        raise Failed(message)


def browser(chromedriver, downloads):
    opts = webdriver.ChromeOptions()
    # --no-sandbox: Chromium's sandbox refuses to start as root (CI runs so).
    # --ignore-certificate-errors: the coordinator's certificate is signed by
    # its own CA, which this throwaway profile does not trust; for this test
    # only.
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--ignore-certificate-errors",
                "--window-size=1400,1100", "--disable-gpu"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    opts.add_experimental_option("prefs", {"download.default_directory": downloads,
                                           "download.prompt_for_download": False})
    driver = webdriver.Chrome(service=Service(executable_path=chromedriver), options=opts)
    driver.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": downloads})
    return driver


def wait_for(driver, what, cond, timeout):
    """cond(driver) until truthy; stale elements (the page re-rendered) retry."""
    def attempt(d):
        try:
            return cond(d)
        except StaleElementReferenceException:
            return False
    try:
        return WebDriverWait(driver, timeout, poll_frequency=0.2).until(attempt)
    except TimeoutException:
        raise Failed("timed out after %ss waiting for %s" % (timeout, what))


def unstale(read):
    """read(driver), read again while a re-render replaces what it found."""
    def reader(driver, *args):
        for _ in range(100):
            try:
                return read(driver, *args)
            except StaleElementReferenceException:
                continue
        return read(driver, *args)
    return reader


def fresh(driver, what, act, timeout=10):
    """act(driver) once the page holds still: an element found, then replaced
    by a poll's re-render before it was read or clicked (stale), is found
    again. Returns what act returned (True when that was None)."""
    def attempt(d):
        result = act(d)
        return True if result is None else (result,)
    got = wait_for(driver, what, attempt, timeout)
    return None if got is True else got[0]


def click(driver, what, css):
    fresh(driver, "a click on " + what, lambda d: d.find_element(By.CSS_SELECTOR, css).click())


@unstale
def text_of(driver, css):
    found = driver.find_elements(By.CSS_SELECTOR, css)
    return found[0].text if found else None


@unstale
def task_state(driver, index):
    rows = driver.find_elements(By.CSS_SELECTOR, '#tasks tr[data-task-index="%d"]' % index)
    return rows[0].get_attribute("data-state") if rows else None


@unstale
def task_indices(driver):
    return [int(r.get_attribute("data-task-index")) for r in driver.find_elements(By.CSS_SELECTOR, "#tasks tbody tr")]


@unstale
def task_states(driver):
    return {r.get_attribute("data-state") for r in driver.find_elements(By.CSS_SELECTOR, "#tasks tbody tr")}


def login(driver, token, view):
    """Logs out (when logged in) and in again with `token`; waits for `view`."""
    if driver.find_element(By.ID, "logout").is_displayed():
        driver.find_element(By.ID, "logout").click()
    driver.execute_script("history.replaceState(null, '', location.pathname);")
    wait_for(driver, "the login form", lambda d: d.find_element(By.ID, "token").is_displayed(), 10)
    driver.find_element(By.ID, "token").send_keys(token)
    driver.find_element(By.ID, "login").click()
    wait_for(driver, "the %s view after login" % view, lambda d: d.find_element(By.ID, view + "-view").is_displayed(), 30)


def open_job_from_list(driver, job_id):
    driver.find_element(By.ID, "nav-jobs").click()
    wait_for(driver, "job %s in the job list" % job_id,
             lambda d: d.find_elements(By.CSS_SELECTOR, '#jobs tr[data-job-id="%s"] a.job-link' % job_id), 30)
    click(driver, "job %s's link" % job_id, '#jobs tr[data-job-id="%s"] a.job-link' % job_id)
    wait_for(driver, "job %s's page" % job_id,
             lambda d: d.find_element(By.ID, "job-id").text == job_id and task_state(d, 0) is not None, 30)


def screenshot(driver, directory, name):
    path = os.path.join(directory, name)
    check(driver.save_screenshot(path), "could not save " + path)
    print("SCREENSHOT " + path, flush=True)


def run(driver, args):
    driver.get(args.url + "/")
    wait_for(driver, "the login form", lambda d: d.find_element(By.ID, "token").is_displayed(), 30)
    check(driver.find_element(By.ID, "fleet-view").is_displayed() is False, "a view showed before login")
    driver.find_element(By.ID, "token").send_keys(args.token)
    driver.find_element(By.ID, "login").click()
    wait_for(driver, "the fleet view after login", lambda d: d.find_element(By.ID, "fleet-view").is_displayed(), 30)
    # A reload would drop this; it must survive every view and refresh.
    driver.execute_script("window.__igNoReload = 'kept';")
    check(driver.execute_script("return sessionStorage.getItem('idlegrid.token');") == args.token,
          "the token is not in sessionStorage")

    # Fleet: every node the grid started is listed, online.
    for node in args.node:
        row = '#nodes tr[data-node-id="%s"]' % node
        wait_for(driver, "node %s listed" % node, lambda d: d.find_elements(By.CSS_SELECTOR, row), 30)
        state = text_of(driver, row + " .state")
        check(state in ("online", "late"), "node %s shows state %r" % (node, state))

    # A running job's task changes state while the page stays loaded.
    open_job_from_list(driver, args.running_job)
    first = task_state(driver, 0)
    check(first == "RUNNING", "the running job's task shows %r, not RUNNING" % first)
    wait_for(driver, "the job's live log to show 'started'", lambda d: "started" in d.find_element(By.ID, "logs").text, 60)
    wait_for(driver, "the running task to become SUCCEEDED without a reload",
             lambda d: task_state(d, 0) == "SUCCEEDED", args.run_timeout)
    check(text_of(driver, "#job-state .state") == "succeeded", "the job's badge did not follow its task")
    check(driver.find_element(By.ID, "cancel-job").get_attribute("disabled") is not None,
          "cancel stays enabled on a finished job")

    # The state filter: the waiting jobs are queued (this one and the
    # requester's sweep), the finished one is not.
    driver.find_element(By.ID, "nav-jobs").click()
    Select(driver.find_element(By.ID, "state-filter")).select_by_value("QUEUED")
    wait_for(driver, "the queued filter to list only the waiting jobs",
             lambda d: sorted(r.get_attribute("data-job-id") for r in d.find_elements(By.CSS_SELECTOR, "#jobs tbody tr"))
             == sorted([args.waiting_job, args.sweep_job]), 30)
    Select(driver.find_element(By.ID, "state-filter")).select_by_value("")

    # A waiting task: the page says why, from the scheduler's explanation.
    open_job_from_list(driver, args.waiting_job)
    check(task_state(driver, 0) == "QUEUED", "the waiting job's task is not QUEUED")
    explain = wait_for(driver, "the explanation of the waiting task",
                       lambda d: d.find_element(By.ID, "explain-box").is_displayed() and
                       d.find_element(By.ID, "explain").text, 30)
    check(args.explain_contains in explain, "explain shows %r, without %r" % (explain, args.explain_contains))
    screenshot(driver, args.artifacts, "dashboard-waiting-job.png")

    # Cancel asks first: dismissed, nothing is cancelled.
    driver.find_element(By.ID, "cancel-job").click()
    WebDriverWait(driver, 10).until(EC.alert_is_present()).dismiss()
    wait_for(driver, "the dismissed cancel to say so", lambda d: "not confirmed" in d.find_element(By.ID, "job-message").text, 10)
    check(task_state(driver, 0) == "QUEUED", "a dismissed cancel cancelled the task")
    # Accepted: the page follows, the caller checks the API.
    driver.find_element(By.ID, "cancel-job").click()
    WebDriverWait(driver, 10).until(EC.alert_is_present()).accept()
    wait_for(driver, "the cancelled task", lambda d: task_state(d, 0) == "CANCELLED", 30)
    wait_for(driver, "the cancel to be confirmed", lambda d: "done" in d.find_element(By.ID, "job-message").text, 10)
    wait_for(driver, "the explanation to go once nothing waits",
             lambda d: not d.find_element(By.ID, "explain-box").is_displayed(), 10)

    # Market: the order book is shown with the pricing rule.
    driver.find_element(By.ID, "nav-market").click()
    wait_for(driver, "the market view", lambda d: d.find_element(By.ID, "pricing-rule").text.startswith("Pricing rule"), 30)
    # Whatever is offered has a recent price (sampled every 5 s).
    offered = [r.get_attribute("data-device-class") for r in driver.find_elements(By.CSS_SELECTOR, "#market tbody tr")]
    for cls in offered:
        wait_for(driver, "a recent price for %s" % cls,
                 lambda d: d.find_elements(By.CSS_SELECTOR, '#prices tr[data-device-class="%s"] svg polyline' % cls), 30)
    print("MARKET classes offered: %s" % ", ".join(offered), flush=True)

    # Fleet again: the chart has its lines once two samples exist.
    driver.find_element(By.ID, "nav-fleet").click()
    wait_for(driver, "the load chart", lambda d: len(d.find_elements(By.CSS_SELECTOR, "#chart svg polyline")) == 4,
             args.chart_timeout)
    screenshot(driver, args.artifacts, "dashboard-fleet.png")

    check(driver.execute_script("return window.__igNoReload;") == "kept", "the page reloaded")

    # A requester (who sees no nodes) lands on the jobs list, not an empty fleet.
    login(driver, args.requester_token, "jobs")
    check(not driver.find_element(By.ID, "fleet-view").is_displayed(), "a requester landed on the fleet")
    requester_sweep(driver, args)
    requester_task_pages(driver, args)
    # The provider sees its node, drains and undrains it, reads its earnings.
    login(driver, args.provider_token, "fleet")
    provider_pages(driver, args)


def requester_sweep(driver, args):
    """A 2,000-task job: its summary, pages of 50, a state filter, a dismissed cancel."""
    open_job_from_list(driver, args.sweep_job)
    wait_for(driver, "the sweep's summary", lambda d: "of 2000 tasks ended" in d.find_element(By.ID, "job-progress-text").text, 30)
    counts = fresh(driver, "the counts by state", lambda d: {
        b.get_attribute("data-state"): b.text for b in d.find_elements(By.CSS_SELECTOR, "#job-counts button")})
    check(counts.get("queued", "").endswith("1950") and counts.get("cancelled", "").endswith("50"),
          "the counts by state show %r" % counts)
    group = wait_for(driver, "the cancelled tasks' reason group",
                     lambda d: [r.text for r in d.find_elements(By.CSS_SELECTOR, '#reasons tr[data-state="cancelled"]')], 30)[0]
    check("100-149" in group and "50" in group, "the reason group shows %r" % group)
    check(task_indices(driver) == list(range(50)), "page 1 holds tasks %s" % task_indices(driver))
    screenshot(driver, args.artifacts, "dashboard-sweep.png")

    driver.find_element(By.ID, "tasks-next").click()
    wait_for(driver, "page 2 (tasks 50-99)", lambda d: task_indices(d) == list(range(50, 100)), 30)
    check("51–100 of 2000" in driver.find_element(By.ID, "tasks-range").text,
          "the range reads %r" % driver.find_element(By.ID, "tasks-range").text)
    driver.find_element(By.ID, "tasks-prev").click()
    wait_for(driver, "page 1 again", lambda d: task_indices(d) == list(range(50)), 30)

    # The state filter: only the cancelled tasks, from the first of them.
    Select(driver.find_element(By.ID, "task-state-filter")).select_by_value("cancelled")
    wait_for(driver, "the cancelled tasks only", lambda d: task_indices(d) == list(range(100, 150)) and
             task_states(d) == {"CANCELLED"}, 30)
    Select(driver.find_element(By.ID, "task-state-filter")).select_by_value("queued")
    wait_for(driver, "the queued tasks only", lambda d: task_indices(d) == list(range(50)) and task_states(d) == {"QUEUED"}, 30)
    driver.find_element(By.ID, "tasks-next").click()
    wait_for(driver, "page 2 of the queued tasks (cancelled ones skipped)",
             lambda d: task_indices(d) == list(range(50, 100)), 30)
    driver.find_element(By.ID, "tasks-next").click()
    wait_for(driver, "page 3 of the queued tasks", lambda d: task_indices(d) == list(range(150, 200)), 30)
    # A reason group's button filters the table to its state.
    driver.find_element(By.CSS_SELECTOR, '#reasons tr[data-state="cancelled"] button.reason-filter').click()
    wait_for(driver, "the reason group's tasks", lambda d: task_indices(d) == list(range(100, 150)), 30)
    check(Select(driver.find_element(By.ID, "task-state-filter")).first_selected_option.get_attribute("value")
          == "cancelled", "the filter does not show the group's state")
    Select(driver.find_element(By.ID, "task-state-filter")).select_by_value("")
    wait_for(driver, "every task again", lambda d: task_indices(d) == list(range(50)), 30)

    # Cancel asks first: dismissed, nothing is cancelled (the caller checks the API).
    driver.find_element(By.ID, "cancel-job").click()
    WebDriverWait(driver, 10).until(EC.alert_is_present()).dismiss()
    wait_for(driver, "the dismissed cancel to say so", lambda d: "not confirmed" in d.find_element(By.ID, "job-message").text, 10)
    check(task_state(driver, 0) == "QUEUED", "a dismissed cancel cancelled a task")


def open_task(driver, job_id, index):
    open_job_from_list(driver, job_id)
    click(driver, "task %d's link" % index, '#tasks tr[data-task-index="%d"] a.task-link' % index)
    wait_for(driver, "task %d's page" % index, lambda d: d.find_element(By.ID, "task-view").is_displayed() and
             d.find_elements(By.CSS_SELECTOR, "#attempts tbody tr"), 30)


def task_log_shows(driver, stream, present, absent):
    Select(driver.find_element(By.ID, "task-log-stream")).select_by_value(stream)
    wait_for(driver, "the %s log to show %r" % (stream or "whole", present),
             lambda d: all(p in d.find_element(By.ID, "task-logs").text for p in present), 30)
    text = driver.find_element(By.ID, "task-logs").text
    for a in absent:
        check(a not in text, "the %s log shows %r: %r" % (stream, a, text))


def requester_task_pages(driver, args):
    """A task's attempts and its log by stream; an output downloaded and checked."""
    open_task(driver, args.streams_job, 0)
    def last_attempt(d):
        row = d.find_elements(By.CSS_SELECTOR, "#attempts tbody tr")[-1]
        return (row.get_attribute("data-state"), row.find_element(By.CSS_SELECTOR, ".attempt-exit").text,
                bool(row.find_elements(By.CSS_SELECTOR, "a.node-link")))
    state, exit_text, has_node = fresh(driver, "the last attempt's row", last_attempt)
    check(state == "SUCCEEDED", "the attempt shows %r" % state)
    check("exit 0" in exit_text, "the attempt's exit is not shown")
    check(has_node, "the attempt names no node")
    task_log_shows(driver, "", ["to stdout", "to stderr"], [])
    task_log_shows(driver, "stdout", ["to stdout"], ["to stderr"])
    task_log_shows(driver, "stderr", ["to stderr"], ["to stdout"])

    open_task(driver, args.output_job, 0)
    download = 'button.download-output[data-path="hello.txt"]'
    digest = wait_for(driver, "the output's download button",
                      lambda d: [b.get_attribute("data-digest") for b in d.find_elements(By.CSS_SELECTOR, download)], 30)[0]
    expected = hashlib.sha256(args.output_text.encode()).hexdigest()
    check(digest == "sha256:" + expected, "the page names digest %s, the output hashes to %s" % (digest, expected))
    click(driver, "the output's download button", download)
    saved = os.path.join(args.downloads, "hello.txt")
    wait_for(driver, "the download of hello.txt", lambda d: "saved hello.txt" in d.find_element(By.ID, "download-message").text
             and os.path.exists(saved), 30)
    with open(saved, "rb") as f:
        got = hashlib.sha256(f.read()).hexdigest()
    check(got == expected, "the downloaded file hashes to %s, not %s" % (got, expected))
    check("digest checked" in driver.find_element(By.ID, "download-message").text, "the page did not check the digest")
    folded = fresh(driver, "the provenance", lambda d: [
        x.get_attribute("open") for x in d.find_elements(By.CSS_SELECTOR, "#attempt-details details.provenance")])
    if folded:  # folded until asked
        check(not folded[0], "the provenance is not folded")
        click(driver, "the provenance's summary", "#attempt-details details.provenance summary")
        wait_for(driver, "the provenance unfolded",
                 lambda d: d.find_element(By.CSS_SELECTOR, "#attempt-details details.provenance tr").is_displayed(), 10)
    screenshot(driver, args.artifacts, "dashboard-task.png")


NODE_ATTEMPT_IDS = ("return [...document.querySelectorAll('#node-attempts tbody tr[data-attempt-id]')]"
                    ".map((r) => r.dataset.attemptId)")


def node_attempts(driver):
    """The node page lists what ran there, newest first, 50 a page, each linking its task."""
    wait_for(driver, "the node's attempts", lambda d: d.execute_script(NODE_ATTEMPT_IDS), 30)
    first = driver.execute_script(NODE_ATTEMPT_IDS)
    check(len(first) <= 50 and len(set(first)) == len(first) and all(first),
          "the node's attempt rows are not one page of distinct attempts: %r" % first[:5])
    links = driver.execute_script(
        "return [...document.querySelectorAll('#node-attempts tbody a.task-link')].map((a) => a.hash)")
    check(len(links) == len(first) and all(h.startswith("#job/") and "/task/" in h for h in links),
          "each attempt links its task: %r" % links[:3])
    if len(first) < 50:
        check(driver.find_element(By.ID, "node-attempts-older").get_attribute("disabled") is not None,
              "Older is offered under a page that is not full")
        return
    driver.find_element(By.ID, "node-attempts-older").click()
    wait_for(driver, "the older attempts", lambda d: (d.execute_script(NODE_ATTEMPT_IDS) or [first[0]])[0]
             not in first, 30)
    older = driver.execute_script(NODE_ATTEMPT_IDS)
    check(not set(older) & set(first), "the older page repeats attempts of the newest")
    check(driver.find_element(By.ID, "node-attempts-newer").get_attribute("disabled") is None,
          "Newer is not offered on the older page")
    driver.find_element(By.ID, "node-attempts-newer").click()
    # Back on the newest page (new attempts may have arrived above those seen first).
    wait_for(driver, "the newest attempts again", lambda d: d.find_element(
        By.ID, "node-attempts-newer").get_attribute("disabled") is not None and
        not set(d.execute_script(NODE_ATTEMPT_IDS)) & set(older), 30)


def provider_pages(driver, args):
    """The provider's node page: drain then undrain (confirmed); earnings and balance."""
    node = args.node[0]
    wait_for(driver, "the provider's node", lambda d: d.find_elements(
        By.CSS_SELECTOR, '#nodes tr[data-node-id="%s"] a.node-link' % node), 30)
    click(driver, "the node's link", '#nodes tr[data-node-id="%s"] a.node-link' % node)
    schedulable = lambda d: text_of(d, '#node-facts tr[data-fact="Schedulable"] .schedulable') or ""
    wait_for(driver, "the node page", lambda d: d.find_element(By.ID, "node-view").is_displayed() and
             schedulable(d).startswith("yes"), 30)
    driver.find_element(By.ID, "drain-node").click()
    WebDriverWait(driver, 10).until(EC.alert_is_present()).accept()
    wait_for(driver, "the node to drain", lambda d: schedulable(d).startswith("draining"), 30)
    check("Drain: done" in driver.find_element(By.ID, "node-message").text, "the drain was not confirmed")
    driver.find_element(By.ID, "undrain-node").click()
    WebDriverWait(driver, 10).until(EC.alert_is_present()).accept()
    wait_for(driver, "the node to take work again", lambda d: schedulable(d).startswith("yes"), 30)
    node_attempts(driver)
    screenshot(driver, args.artifacts, "dashboard-node.png")

    driver.find_element(By.ID, "nav-earnings").click()
    wait_for(driver, "the provider's earnings", lambda d: d.find_elements(
        By.CSS_SELECTOR, '#earnings tr[data-node-id="%s"]' % node) and
        d.find_element(By.ID, "earnings-summary").text.startswith("metered"), 30)
    driver.find_element(By.ID, "nav-balance").click()
    # This grid keeps no ledger: the page says so, in the view, not as an error.
    wait_for(driver, "the balance page", lambda d: d.find_element(By.ID, "balance-note").is_displayed() or
             d.find_elements(By.CSS_SELECTOR, '#balance tr[data-fact="Available"]'), 30)
    check(not driver.find_element(By.ID, "error").is_displayed(), "the balance page shows an error")


# Requests refused on purpose: a provider's token may not list jobs (its
# login checks the token there; 403), and this grid keeps no ledger (409).
EXPECTED_REFUSALS = {("/v1/jobs", 403), ("/v1/ledger/balance", 409), ("/v1/ledger/history", 409)}
REFUSED = re.compile(r"^https://[^/ ]+(/[^? ]*)\S* - Failed to load resource: the server responded with a status of (\d+)")


def expected_refusal(message):
    m = REFUSED.match(message)
    return bool(m) and (m.group(1), int(m.group(2))) in EXPECTED_REFUSALS


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--token", required=True)
    p.add_argument("--node", action="append", default=[])
    p.add_argument("--running-job", required=True)
    p.add_argument("--waiting-job", required=True)
    p.add_argument("--explain-contains", required=True)
    p.add_argument("--artifacts", required=True)
    p.add_argument("--chromedriver", default="/usr/bin/chromedriver")
    p.add_argument("--run-timeout", type=float, default=120)
    p.add_argument("--chart-timeout", type=float, default=30)
    p.add_argument("--requester-token", required=True)
    p.add_argument("--provider-token", required=True)
    p.add_argument("--sweep-job", required=True, help="2,000 tasks waiting, 100-149 cancelled")
    p.add_argument("--streams-job", required=True, help="one task that wrote to stdout and stderr")
    p.add_argument("--output-job", required=True, help="one task whose output hello.txt holds --output-text")
    p.add_argument("--output-text", required=True)
    args = p.parse_args()
    os.makedirs(args.artifacts, exist_ok=True)
    args.downloads = os.path.join(os.path.abspath(args.artifacts), "downloads")
    shutil.rmtree(args.downloads, ignore_errors=True)
    os.makedirs(args.downloads)

    driver = browser(args.chromedriver, args.downloads)
    failure = None
    try:
        run(driver, args)
    except (Failed, WebDriverException) as e:
        failure = str(e)
        try:
            screenshot(driver, args.artifacts, "dashboard-failure.png")
        except Exception as shot:  # the failure above is what matters
            print("no failure screenshot: %s" % shot, file=sys.stderr)
    # The console: no JavaScript error, on any view. Chromium also logs each
    # refused request; those the script provokes on purpose are expected.
    try:
        severe = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
    finally:
        driver.quit()
    refused = [e for e in severe if expected_refusal(e.get("message", ""))]
    for e in refused:
        print("CONSOLE (expected refusal): %s" % e.get("message"), flush=True)
    severe = [e for e in severe if e not in refused]
    for e in severe:
        print("CONSOLE SEVERE: %s" % e.get("message"), file=sys.stderr)
    if severe and failure is None:
        failure = "%d JavaScript error(s) in the console" % len(severe)
    if failure:
        print("FAILED: " + failure, file=sys.stderr)
        return 1
    print("PASSED", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
