#!/usr/bin/env python3
"""Summary of bench/sweep.sh: reads the settled job (`idlegrid status JOB --json`)
and the measured wall times, prints a table and optionally writes JSON.
Exit 1 if any task did not succeed exactly once (or is missing).

Phases per task, from the coordinator's timestamps (ms since the epoch), using
the task's last attempt (its successful one):
  queue wait   job created_at_ms -> attempt assigned_at_ms (includes time lost
               to earlier attempts of the same task, and waiting for a free slot)
  start        assigned_at_ms -> started_at_ms (the agent got the assignment,
               checked it, spawned the container)
  run+collect  started_at_ms -> finished_at_ms (the program ran, the container
               was torn down, logs and outputs were uploaded, the result reported)
"""
import argparse
import collections
import json
import math
import os
import platform
import subprocess
import sys
import time


def pct(values, p):
    """Nearest-rank percentile; None for no values."""
    if not values:
        return None
    v = sorted(values)
    return v[max(0, math.ceil(p / 100 * len(v)) - 1)]


def rate(n, seconds):
    return round(n / seconds, 2) if seconds else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--job", required=True)
    ap.add_argument("--wall", type=float, required=True)
    ap.add_argument("--tasks", type=int, required=True)
    ap.add_argument("--agents", type=int)
    ap.add_argument("--heartbeat-ms", type=int)
    ap.add_argument("--cpu")
    ap.add_argument("--agent-args", default="")
    ap.add_argument("--slurm-true", default="")
    ap.add_argument("--slurm-podman", default="")
    ap.add_argument("--slurm-sched", default="")
    ap.add_argument("--commit", help="git describe of the tree when the bench started")
    ap.add_argument("--binary", help="the idlegrid binary that ran (for its build time)")
    ap.add_argument("--load", action="append", default=[], help="PHASE=1-5-15 min load averages")
    ap.add_argument("--note", action="append", default=[], help="something the bench had to do (printed)")
    ap.add_argument("--json")
    a = ap.parse_args()

    with open(a.job) as f:
        job = json.load(f)
    created = int(job.get("createdAtMs", 0))
    tasks = job.get("tasks", [])
    states = collections.Counter(t.get("state", "TASK_STATE_UNSPECIFIED") for t in tasks)
    reasons = collections.Counter()  # how attempts that did not succeed ended
    examples = {}  # the first message seen for each of those reasons
    phases = {"queue_wait": [], "start": [], "run_collect": [], "total": []}
    multi = bad = 0
    last_finish = 0
    for t in tasks:
        attempts = t.get("attempts", [])
        multi += len(attempts) > 1
        succeeded = [x for x in attempts if x.get("state") == "SUCCEEDED"]
        bad += not (t.get("state") == "SUCCEEDED" and len(succeeded) == 1)
        for x in attempts:
            if x.get("state") != "SUCCEEDED":
                why = x.get("failureReason", x.get("state", "?"))
                reasons[why] += 1
                examples.setdefault(why, f"task {t.get('index', 0)}: {x.get('message', '')[:300]}")
        if not attempts:
            continue
        last = succeeded[0] if succeeded else attempts[-1]
        asg, sta, fin = (int(last.get(k, 0)) for k in ("assignedAtMs", "startedAtMs", "finishedAtMs"))
        last_finish = max(last_finish, fin)
        if asg and created:
            phases["queue_wait"].append(asg - created)
        if sta and asg:
            phases["start"].append(sta - asg)
        if fin and sta:
            phases["run_collect"].append(fin - sta)
        if fin and created:
            phases["total"].append(fin - created)
    bad += max(0, a.tasks - len(tasks))  # tasks the job does not even list
    ok = states.get("SUCCEEDED", 0)

    def secs(s):
        return float(s) if s else None

    sl_true, sl_podman = secs(a.slurm_true), secs(a.slurm_podman)
    ig_rate = rate(ok, a.wall)
    out = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "commit": a.commit or subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(__file__)), "describe",
                                              "--always", "--dirty"], capture_output=True, text=True).stdout.strip(),
        "binary_built": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(os.path.getmtime(a.binary)))
        if a.binary and os.path.exists(a.binary) else None,
        "machine": {"cpus": os.cpu_count(), "kernel": platform.release(),
                    "loadavg": dict(x.split("=", 1) for x in a.load)},
        "notes": a.note,
        "config": {"tasks": a.tasks, "agents": a.agents, "heartbeat_ms": a.heartbeat_ms, "cpu": a.cpu,
                   "agent_args": a.agent_args, "slurm_sched": a.slurm_sched},
        "idlegrid": {
            "job": job.get("id"), "job_state": job.get("state"), "wall_s": a.wall,
            "coordinator_span_s": round((last_finish - created) / 1000, 3) if last_finish and created else None,
            "tasks_per_s": ig_rate, "states": dict(states), "tasks_with_retries": multi,
            "node_lost_attempts": reasons.get("NODE_LOST", 0), "failed_attempts_by_reason": dict(reasons),
            "failed_attempt_examples": examples,
            "not_succeeded_exactly_once": bad,
            "phases_ms": {k: {"n": len(v), "p50": pct(v, 50), "p99": pct(v, 99), "max": max(v, default=None)}
                          for k, v in phases.items()},
        },
        "slurm": None if sl_true is None else {
            "true_wall_s": sl_true, "true_tasks_per_s": rate(a.tasks, sl_true),
            "podman_wall_s": sl_podman, "podman_tasks_per_s": rate(a.tasks, sl_podman),
            "idlegrid_over_true": round(ig_rate / rate(a.tasks, sl_true), 3) if ig_rate else None,
            "idlegrid_over_podman": round(ig_rate / rate(a.tasks, sl_podman), 3) if ig_rate and sl_podman else None,
        },
    }

    ig = out["idlegrid"]
    print(f"\n== sweep: {a.tasks} tasks, {a.agents} agents, cpu {a.cpu}, heartbeat {a.heartbeat_ms} ms"
          f"{', agent args ' + a.agent_args if a.agent_args else ''} ({out['commit']}, {os.cpu_count()} cpus)")
    print(f"idlegrid  wall {a.wall:.2f} s  {ig_rate} tasks/s  (coordinator: created -> last finished "
          f"{ig['coordinator_span_s']} s)  job {ig['job_state']}")
    print("          states " + " ".join(f"{k}={v}" for k, v in sorted(states.items())) +
          f"  tasks with >1 attempt={multi}  node_lost attempts={ig['node_lost_attempts']}" +
          (f"  other failed attempts={dict(reasons)}" if sum(reasons.values()) != ig["node_lost_attempts"] else ""))
    for why, msg in examples.items():
        print(f"          e.g. {why}: {msg}")
    print(f"          {'phase (ms)':<12} {'n':>5} {'p50':>7} {'p99':>7} {'max':>7}")
    for k, v in ig["phases_ms"].items():
        print(f"          {k:<12} {v['n']:>5} {v['p50'] if v['p50'] is not None else '-':>7} "
              f"{v['p99'] if v['p99'] is not None else '-':>7} {v['max'] if v['max'] is not None else '-':>7}")
    if out["slurm"]:
        s = out["slurm"]
        print(f"slurm     /bin/true   wall {sl_true:.2f} s  {s['true_tasks_per_s']} tasks/s   "
              f"idlegrid/slurm = {s['idlegrid_over_true']}")
        if sl_podman:
            print(f"slurm     podman run  wall {sl_podman:.2f} s  {s['podman_tasks_per_s']} tasks/s   "
                  f"idlegrid/slurm = {s['idlegrid_over_podman']}")
    for n in a.note:
        print(f"note: {n}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=2)
            f.write("\n")
    if bad:
        print(f"FAIL: {bad} of {a.tasks} tasks did not succeed exactly once", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
