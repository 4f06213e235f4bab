#!/usr/bin/python3
"""Drives the web dashboard in headless Chromium against a live coordinator.

Started by tests/e2e/dashboard_e2e_test.cc, which owns the grid (a real
coordinator and agent), submits the jobs and checks through the API what the
clicks did. This script only plays the user: it logs in with the token, reads
the pages and clicks. Every wait is on something the page shows, never a
fixed sleep. Exits 0 when every check held; otherwise prints why and exits 1.
Screenshots go to --artifacts; each path is printed on a "SCREENSHOT " line.
"""
import argparse
import os
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


def browser(chromedriver):
    opts = webdriver.ChromeOptions()
    # --no-sandbox: Chromium's sandbox refuses to start as root (CI runs so).
    # --ignore-certificate-errors: the coordinator's certificate is signed by
    # its own CA, which this throwaway profile does not trust; for this test
    # only.
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--ignore-certificate-errors",
                "--window-size=1400,1100", "--disable-gpu"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(executable_path=chromedriver), options=opts)


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


def text_of(driver, css):
    found = driver.find_elements(By.CSS_SELECTOR, css)
    return found[0].text if found else None


def task_state(driver, index):
    rows = driver.find_elements(By.CSS_SELECTOR, '#tasks tr[data-task-index="%d"]' % index)
    return rows[0].get_attribute("data-state") if rows else None


def open_job_from_list(driver, job_id):
    driver.find_element(By.ID, "nav-jobs").click()
    link = wait_for(driver, "job %s in the job list" % job_id,
                    lambda d: d.find_elements(By.CSS_SELECTOR, '#jobs tr[data-job-id="%s"] a.job-link' % job_id), 30)
    link[0].click()
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

    # The state filter: the waiting job is queued, the finished one is not.
    driver.find_element(By.ID, "nav-jobs").click()
    Select(driver.find_element(By.ID, "state-filter")).select_by_value("QUEUED")
    wait_for(driver, "the queued filter to list only the waiting job",
             lambda d: [r.get_attribute("data-job-id") for r in d.find_elements(By.CSS_SELECTOR, "#jobs tbody tr")]
             == [args.waiting_job], 30)
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
    if args.requester_token:
        driver.find_element(By.ID, "logout").click()
        driver.execute_script("history.replaceState(null, '', location.pathname);")
        wait_for(driver, "the login form again", lambda d: d.find_element(By.ID, "token").is_displayed(), 10)
        driver.find_element(By.ID, "token").send_keys(args.requester_token)
        driver.find_element(By.ID, "login").click()
        wait_for(driver, "a requester's landing on the jobs view",
                 lambda d: d.find_element(By.ID, "jobs-view").is_displayed(), 30)
        check(not driver.find_element(By.ID, "fleet-view").is_displayed(), "a requester landed on the fleet")


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
    p.add_argument("--requester-token", default="")
    args = p.parse_args()
    os.makedirs(args.artifacts, exist_ok=True)

    driver = browser(args.chromedriver)
    failure = None
    try:
        run(driver, args)
    except (Failed, WebDriverException) as e:
        failure = str(e)
        try:
            screenshot(driver, args.artifacts, "dashboard-failure.png")
        except Exception as shot:  # the failure above is what matters
            print("no failure screenshot: %s" % shot, file=sys.stderr)
    # The console: no JavaScript error, on any view.
    try:
        severe = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
    finally:
        driver.quit()
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
