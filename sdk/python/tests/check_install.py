"""The SDK as pip installs it: builds a copy of sdk/python offline (Debian's
setuptools: --no-build-isolation --no-index), which must generate the
protocol modules itself, into a fresh directory; then runs the unit tests
against that installed package alone. Then the README's two lines: a virtual
environment that sees Debian's packages, and pip install into it (Debian 12's
own Python refuses pip, PEP 668). Last, the wheel make_dist.py makes, which
carries the protocol modules: installed into another virtual environment
with no protoc or grpc_python_plugin on PATH, it imports and its unit tests
pass. ctest: sdk_python_install."""
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
        check_venv(tmp, source, env)
        check_wheel(tmp, source, env)


def check_venv(tmp, source, env):
    venv = os.path.join(tmp, "venv")
    env = {k: v for k, v in env.items() if k != "PYTHONPATH"}
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv], check=True, env=env, cwd=tmp)
    python = os.path.join(venv, "bin", "python")
    subprocess.run([os.path.join(venv, "bin", "pip"), "install", "--quiet", "--no-build-isolation", "--no-index", source],
                   check=True, env=env, cwd=tmp)
    where = subprocess.run([python, "-c", "import idlegrid.v1.idlegrid_pb2_grpc as g; print(g.__file__)"],
                           check=True, env=env, cwd=tmp, capture_output=True, text=True).stdout.strip()
    if not where.startswith(venv + os.sep):
        sys.exit(f"the venv imported {where}, not its own install")
    print(f"installed in a venv as the README says: {where}")


def check_wheel(tmp, source, env):
    env = {k: v for k, v in env.items() if k not in ("PYTHONPATH", "IDLEGRID_PROTO_DIR")}
    dist = os.path.join(tmp, "dist")
    wheel = subprocess.run([sys.executable, os.path.join(SDK, "make_dist.py"), dist], check=True, env=env, cwd=tmp,
                           capture_output=True, text=True).stdout.strip().splitlines()[-1]
    venv = os.path.join(tmp, "wheel-venv")
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv], check=True, env=env, cwd=tmp)
    # Only the venv's own programs on PATH: no protoc, no grpc_python_plugin.
    bare = dict(env, PATH=os.path.join(venv, "bin"))
    for tool in ("protoc", "grpc_python_plugin"):
        if shutil.which(tool, path=bare["PATH"]):
            sys.exit(f"{tool} is on the bare PATH: the check would prove nothing")
    subprocess.run([os.path.join(venv, "bin", "pip"), "install", "--quiet", "--no-index", "--no-deps", wheel],
                   check=True, env=bare, cwd=tmp)
    python = os.path.join(venv, "bin", "python")
    where = subprocess.run([python, "-c", "import idlegrid.v1.idlegrid_pb2_grpc as g; print(g.__file__)"],
                           check=True, env=bare, cwd=tmp, capture_output=True, text=True).stdout.strip()
    if not where.startswith(venv + os.sep):
        sys.exit(f"the wheel's venv imported {where}, not its own install")
    # The tests' stand-in CLIs are shell scripts: they need the system's PATH back.
    subprocess.run([python, "-m", "unittest", "discover", "-s", os.path.join(source, "tests"),
                    "-t", os.path.join(source, "tests"), "-p", "test_*.py"], check=True, env=env, cwd=tmp)
    print(f"the wheel {os.path.basename(wheel)} installed without protoc: {where}")


if __name__ == "__main__":
    main()
