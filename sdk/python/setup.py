"""Generates the protocol modules (idlegrid.v1) into the build with protoc's
Python plugin and grpc_python_plugin (Debian: protobuf-compiler,
protobuf-compiler-grpc), from the repository's proto/ (or $IDLEGRID_PROTO_DIR).
Generated code is never kept in the source tree."""
import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


class BuildWithStubs(build_py):
    def run(self):
        super().run()
        proto_dir = os.environ.get("IDLEGRID_PROTO_DIR", os.path.join(HERE, "..", "..", "proto"))
        proto = os.path.join(proto_dir, "idlegrid", "v1", "idlegrid.proto")
        if not os.path.exists(proto):
            raise SystemExit(f"{proto} not found: build from the idlegrid repository or set IDLEGRID_PROTO_DIR")
        plugin = shutil.which("grpc_python_plugin")
        if not shutil.which("protoc") or not plugin:
            raise SystemExit("protoc and grpc_python_plugin are needed (apt-get install protobuf-compiler "
                             "protobuf-compiler-grpc)")
        out = os.path.abspath(self.build_lib)
        subprocess.run(["protoc", f"--proto_path={proto_dir}", f"--python_out={out}", f"--grpc_out={out}",
                        f"--plugin=protoc-gen-grpc={plugin}", proto], check=True)
        open(os.path.join(out, "idlegrid", "v1", "__init__.py"), "a").close()

    def find_package_modules(self, package, package_dir):
        # idlegrid.v1 has no sources here: run() generates it.
        if package == "idlegrid.v1":
            return []
        return super().find_package_modules(package, package_dir)


setup(cmdclass={"build_py": BuildWithStubs})
