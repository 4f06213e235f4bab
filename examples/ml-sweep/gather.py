#!/usr/bin/env python3
"""The sweep's results as one table, with the idlegrid SDK.

    python3 gather.py job.yaml          # submit the manifest, wait, print the table
    python3 gather.py --job JOB_ID      # the table of a job already submitted

One row per point (task): its item's lr and hidden, the accuracy and loss of
its metrics.json (downloaded and checked against its sha256), and the node(s)
whose run succeeded (with verification: replicate, one per provider). It
reads the same configuration as the CLI (IDLEGRID_CONFIG, or
~/.config/idlegrid/config.yaml; a coordinator's DATA_DIR/client.yaml works).
Exit status: 0 when every point succeeded, 1 otherwise, 2 when the submit
was refused.
"""
import argparse
import json
import sys

import idlegrid


def state_name(message):
    """The name of a Task's or Attempt's `state` enum value ("SUCCEEDED")."""
    return message.DESCRIPTOR.fields_by_name["state"].enum_type.values_by_number[message.state].name


def succeeded_nodes(task, names):
    nodes = [names.get(a.node_id, a.node_id) for a in task.attempts if state_name(a) == "SUCCEEDED"]
    return ",".join(sorted(set(nodes))) or "-"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("manifest", nargs="?", help="job.yaml to submit (its image: filled in)")
    parser.add_argument("--job", help="an existing job's id instead of submitting")
    options = parser.parse_args()
    if bool(options.manifest) == bool(options.job):
        parser.error("give either a manifest to submit or --job JOB_ID")

    grid = idlegrid.connect()
    if options.job:
        job = grid.job(options.job)
    else:
        try:
            job = grid.submit_manifest(options.manifest)
        except idlegrid.IdlegridError as e:  # the coordinator's (or the manifest parser's) reason
            print(f"submit refused ({e.code}): {e.reason}", file=sys.stderr)
            return 2
        print(f"submitted {job.id}", file=sys.stderr, flush=True)

    rows = []
    for r in job.results():
        row = {"point": r.index, "lr": r.item.get("lr", "?"), "hidden": r.item.get("hidden", "?"), "task": r.task}
        if r.ok:
            metrics = json.loads(r.read_text("metrics.json"))
            row.update(accuracy=f"{metrics['accuracy']:.4f}", loss=f"{metrics['loss']:.4f}")
        else:
            row.update(accuracy=r.state, loss=r.failure_reason)
        print(f"point {r.index} ended {r.state}", file=sys.stderr, flush=True)
        rows.append(row)

    names = {n.id: n.name for n in grid.nodes()}
    header = ("point", "lr", "hidden", "accuracy", "loss", "node")
    table = [header] + [(str(r["point"]), r["lr"], r["hidden"], r["accuracy"], r["loss"],
                         succeeded_nodes(r["task"], names)) for r in sorted(rows, key=lambda r: r["point"])]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    ok = [r for r in rows if state_name(r["task"]) == "SUCCEEDED"]
    if ok:
        best = max(ok, key=lambda r: float(r["accuracy"]))
        print(f"best: point {best['point']} (lr {best['lr']}, hidden {best['hidden']}) accuracy {best['accuracy']}")
    status = job.status()
    print(f"job {job.id} {status.state}: {status.counts}")
    return 0 if len(ok) == len(rows) and rows else 1


if __name__ == "__main__":
    sys.exit(main())
