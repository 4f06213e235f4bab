"""The protocol modules (idlegrid.v1): shipped in a wheel made by
make_dist.py (installing it needs no protoc), or, installing from the
repository's source, generated into the build with protoc's Python plugin
and grpc_python_plugin (Debian: protobuf-compiler, protobuf-compiler-grpc)
from the repository's proto/ (or $IDLEGRID_PROTO_DIR). Generated code is
never kept in the source tree."""
import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
STUBS = ("idlegrid_pb2.py", "idlegrid_pb2_grpc.py")


def shipped():
    """Whether this source holds the generated modules (a make_dist.py staging copy)."""
    return all(os.path.exists(os.path.join(HERE, "idlegrid", "v1", name)) for name in STUBS)


def generate(out):
    proto_dir = os.environ.get("IDLEGRID_PROTO_DIR", os.path.join(HERE, "..", "..", "proto"))
    proto = os.path.join(proto_dir, "idlegrid", "v1", "idlegrid.proto")
    if not os.path.exists(proto):
        raise SystemExit(f"{proto} not found: build from the idlegrid repository, set IDLEGRID_PROTO_DIR, "
                         "or install the wheel sdk/python/make_dist.py makes")
    plugin = shutil.which("grpc_python_plugin")
    if not shutil.which("protoc") or not plugin:
        raise SystemExit("protoc and grpc_python_plugin are needed to build from source (apt-get install "
                         "protobuf-compiler protobuf-compiler-grpc), or install the wheel sdk/python/make_dist.py "
                         "makes on a machine that has them")
    subprocess.run(["protoc", f"--proto_path={proto_dir}", f"--python_out={out}", f"--grpc_out={out}",
                    f"--plugin=protoc-gen-grpc={plugin}", proto], check=True)
    open(os.path.join(out, "idlegrid", "v1", "__init__.py"), "a").close()


class BuildWithStubs(build_py):
    def run(self):
        super().run()
        if not shipped():
            generate(os.path.abspath(self.build_lib))

    def find_package_modules(self, package, package_dir):
        # idlegrid.v1 has no sources in the repository: run() generates it.
        if package == "idlegrid.v1" and not shipped():
            return []
        return super().find_package_modules(package, package_dir)


if __name__ == "__main__":  # make_dist.py imports generate() without running setup
    setup(cmdclass={"build_py": BuildWithStubs})
