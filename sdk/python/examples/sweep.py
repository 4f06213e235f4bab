#!/usr/bin/env python3
"""A parameter sweep with the idlegrid SDK: the Monte Carlo estimate of pi
from examples/sweep/sim.c, one task per sample count, results printed as
tasks finish (each output verified by sha256).

    ./scripts/build-image.sh examples/sweep/sim.c localhost/pi-sim:1 /tmp/pi-sim.tar
    IMAGE=$(idlegrid image push /tmp/pi-sim.tar)
    python3 sdk/python/examples/sweep.py pi-sim@$IMAGE --samples 100000,200000,400000

It reads the same configuration as the CLI (IDLEGRID_CONFIG, or
~/.config/idlegrid/config.yaml; a coordinator's DATA_DIR/client.yaml works).
Exit status: 0 when every task succeeded, 1 otherwise.
"""
import argparse
import sys

import idlegrid


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("image", help="the pi-sim image, NAME@sha256:...")
    parser.add_argument("--samples", default="100000,200000,400000,800000",
                        help="comma-separated sample counts, one task each")
    options = parser.parse_args()

    grid = idlegrid.connect()
    items = [{"samples": int(n)} for n in options.samples.split(",")]
    try:
        job = grid.map(options.image, items, args=["{{.samples}}", "/out"], command=["/sim"], name="pi-sweep",
                       cpu=1, memory=256 * idlegrid.MiB, run_timeout=300)
    except idlegrid.IdlegridError as e:  # the coordinator's reason: which item, which image
        print(f"submit refused ({e.code}): {e.reason}", file=sys.stderr)
        return 2
    print(f"submitted {job.id}: {len(items)} tasks", flush=True)
    failed = 0
    for r in job.results():
        if r.ok:
            print(f"item {r.index} samples={r.item['samples']}: {r.read_text('result.txt').strip()}", flush=True)
        else:
            failed += 1
            print(f"item {r.index} samples={r.item['samples']}: {r.state} ({r.failure_reason}) {r.message}",
                  flush=True)
    status = job.status()
    print(f"job {job.id} {status.state}: {status.counts}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
