"""The SDK as pip installs it: builds a copy of sdk/python offline (Debian's
setuptools: --no-build-isolation --no-index), which must generate the
protocol modules itself, into a fresh directory; then runs the unit tests
against that installed package alone. ctest: sdk_python_install."""
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SDK = os.path.dirname(HERE)
REPO = os.path.dirname(os.path.dirname(SDK))


def main():
    with tempfile.TemporaryDirectory() as tmp:
        source = os.path.join(tmp, "source")
        shutil.copytree(SDK, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
        site = os.path.join(tmp, "site")
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env["IDLEGRID_PROTO_DIR"] = os.path.join(REPO, "proto")
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-build-isolation", "--no-index",
                        "--no-deps", "--target", site, source], check=True, env=env, cwd=tmp)
        env["PYTHONPATH"] = site
        where = subprocess.run([sys.executable, "-c", "import idlegrid, idlegrid.v1.idlegrid_pb2_grpc as g; "
                                "print(idlegrid.__file__); print(g.__file__)"],
                               check=True, env=env, cwd=tmp, capture_output=True, text=True).stdout.split()
        for path in where:
            if not path.startswith(site + os.sep):
                sys.exit(f"imported {path}, not the installed package under {site}")
        subprocess.run([sys.executable, "-m", "unittest", "discover", "-s", os.path.join(source, "tests"),
                        "-t", os.path.join(source, "tests"), "-p", "test_*.py"], check=True, env=env, cwd=tmp)
        print(f"installed and tested: {' '.join(where)}")


if __name__ == "__main__":
    main()
