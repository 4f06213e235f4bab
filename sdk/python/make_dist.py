"""Makes a wheel of the SDK with its protocol modules inside, so installing
it needs neither protoc nor this repository: `python3 sdk/python/make_dist.py
DIR` (on a machine with Debian's protobuf-compiler and
protobuf-compiler-grpc, which scripts/install-deps.sh installs), then on any
machine `pip install DIR/idlegrid-*.whl` (in a virtual environment on Debian
12: docs/sdk-python.md). Prints the wheel's path."""
import glob
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # nothing left in the source tree
sys.path.insert(0, HERE)
import setup as sdk_setup  # noqa: E402  (its generate(), not its setup() call: see the guard below)


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        stage = os.path.join(tmp, "idlegrid-sdk")
        shutil.copytree(HERE, stage, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "tests"))
        gen = os.path.join(tmp, "gen")
        os.makedirs(os.path.join(gen, "idlegrid", "v1"))
        sdk_setup.generate(gen)
        os.makedirs(os.path.join(stage, "idlegrid", "v1"), exist_ok=True)
        for name in sdk_setup.STUBS + ("__init__.py",):
            shutil.copy(os.path.join(gen, "idlegrid", "v1", name), os.path.join(stage, "idlegrid", "v1", name))
        before = set(glob.glob(os.path.join(out_dir, "idlegrid-*.whl")))
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                        "--no-index", "--wheel-dir", out_dir, stage], check=True, cwd=tmp)
        made = sorted(set(glob.glob(os.path.join(out_dir, "idlegrid-*.whl"))) - before) or \
            sorted(glob.glob(os.path.join(out_dir, "idlegrid-*.whl")))
        print(made[-1])


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: make_dist.py OUT_DIR")
    main(os.path.abspath(sys.argv[1]))
