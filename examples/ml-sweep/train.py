#!/usr/bin/env python3
"""One point of a hyperparameter sweep: a small MLP on scikit-learn's 8x8 digits.

The data ships with python3-sklearn (no download). Hyperparameters come from
the command line, else from the environment (LR, HIDDEN, SEED, EPOCHS), else
the defaults below. Deterministic: a fixed train/test split, one seed for the
weights and one shuffle per epoch derived from it, and one thread (--threads).

Every epoch it replaces CHECKPOINT_DIR/state.pt atomically (write, fsync,
rename) and, when that file exists at start, resumes from it: a run that is
killed and resumed ends with the same numbers as one that was not.

At the end it writes OUT/metrics.json (what verification compares: the
hyperparameters, accuracy and losses) and OUT/run.json (how this run went:
seconds, whether it resumed), and prints the metrics as one JSON line.
"""
import argparse
import json
import os
import sys
import tempfile
import time

# On the grid HOME and XDG_CACHE_HOME are writable (the agent sets them); under a
# plain `podman run --read-only` (bench/ml.sh) they are not: caches fall back to /tmp.
_scratch = tempfile.gettempdir()
for _var, _sub in (("TORCH_HOME", "torch"), ("MPLCONFIGDIR", "matplotlib"), ("XDG_CACHE_HOME", "cache")):
    os.environ.setdefault(_var, os.path.join(_scratch, _sub))


def parse_args(argv):
    env = os.environ
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lr", type=float, default=float(env.get("LR", "0.05")), help="SGD learning rate")
    p.add_argument("--hidden", type=int, default=int(env.get("HIDDEN", "64")), help="hidden units")
    p.add_argument("--seed", type=int, default=int(env.get("SEED", "0")), help="weights and shuffling")
    p.add_argument("--epochs", type=int, default=int(env.get("EPOCHS", "30")))
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--threads", type=int, default=int(env.get("TRAIN_THREADS", "1")),
                   help="torch intra-op threads (match resources.cpu)")
    p.add_argument("--out", default=env.get("OUT_DIR", "/out" if os.path.isdir("/out") else "out"),
                   help="where metrics.json goes")
    p.add_argument("--checkpoint-dir", default=env.get("IDLEGRID_CHECKPOINT_DIR", ""),
                   help="state.pt is saved here every epoch and resumed from (default: $IDLEGRID_CHECKPOINT_DIR)")
    p.add_argument("--stop-after", type=int, default=0,
                   help="testing: exit with status 75 after this many epochs of this run (0: never)")
    return p.parse_args(argv)


def load_data(torch):
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x = (digits.data / 16.0).astype("float32")
    y = digits.target.astype("int64")
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.2, random_state=0, stratify=y)
    return (torch.from_numpy(x_train), torch.from_numpy(y_train), torch.from_numpy(x_test), torch.from_numpy(y_test))


def save_atomically(torch, state, path):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def main(argv):
    args = parse_args(argv)
    started = time.monotonic()
    import torch

    torch.set_num_threads(max(1, args.threads))
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(args.seed)
    x_train, y_train, x_test, y_test = load_data(torch)
    model = torch.nn.Sequential(
        torch.nn.Linear(64, args.hidden), torch.nn.ReLU(), torch.nn.Linear(args.hidden, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()

    first_epoch, resumed_from, train_loss = 0, None, float("nan")
    checkpoint = os.path.join(args.checkpoint_dir, "state.pt") if args.checkpoint_dir else ""
    if checkpoint:
        os.makedirs(args.checkpoint_dir, exist_ok=True)
    if checkpoint and os.path.exists(checkpoint):
        state = torch.load(checkpoint)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        first_epoch = resumed_from = state["epoch"]
        train_loss = state["train_loss"]
        print(f"resumed from epoch {resumed_from} ({checkpoint})", flush=True)

    for epoch in range(first_epoch, args.epochs):
        # The order of an epoch depends on (seed, epoch) only, so a resumed run
        # sees exactly the batches an uninterrupted one would.
        order = torch.randperm(len(x_train), generator=torch.Generator().manual_seed(args.seed * 100003 + epoch))
        model.train()
        total, count = 0.0, 0
        for start in range(0, len(order), args.batch_size):
            batch = order[start:start + args.batch_size]
            optimizer.zero_grad()
            loss = loss_fn(model(x_train[batch]), y_train[batch])
            loss.backward()
            optimizer.step()
            total += loss.item() * len(batch)
            count += len(batch)
        train_loss = total / count
        print(f"epoch {epoch + 1}/{args.epochs} train_loss {train_loss:.6f}", flush=True)
        if checkpoint:
            save_atomically(torch, {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                                    "epoch": epoch + 1, "train_loss": train_loss}, checkpoint)
        if args.stop_after and epoch + 1 - first_epoch >= args.stop_after and epoch + 1 < args.epochs:
            print(f"stopping after {args.stop_after} epochs (--stop-after)", flush=True)
            return 75

    model.eval()
    with torch.no_grad():
        logits = model(x_test)
        test_loss = loss_fn(logits, y_test).item()
        accuracy = (logits.argmax(dim=1) == y_test).float().mean().item()
    metrics = {
        "point": int(os.environ.get("IDLEGRID_TASK_INDEX", "0")),
        "lr": args.lr,
        "hidden": args.hidden,
        "seed": args.seed,
        "epochs": args.epochs,
        "accuracy": round(accuracy, 6),
        "loss": round(train_loss, 6),
        "test_loss": round(test_loss, 6),
    }
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "metrics.json"), "w") as f:
        json.dump(metrics, f, sort_keys=True)
        f.write("\n")
    run = {"seconds": round(time.monotonic() - started, 3), "resumed_from_epoch": resumed_from,
           "threads": torch.get_num_threads(), "torch": torch.__version__}
    with open(os.path.join(args.out, "run.json"), "w") as f:
        json.dump(run, f, sort_keys=True)
        f.write("\n")
    print(json.dumps(metrics, sort_keys=True), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
