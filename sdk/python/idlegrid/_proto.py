"""The generated protocol modules (idlegrid.v1), made by protoc's Python and
gRPC plugins from proto/idlegrid/v1/idlegrid.proto: at install time by
setup.py, or by the CMake target idlegrid_python_stubs into
build/gen/python (put that directory on PYTHONPATH)."""
try:
    from .v1 import idlegrid_pb2 as pb
    from .v1 import idlegrid_pb2_grpc as pb_grpc
except ImportError as e:  # pragma: no cover - depends on the installation
    raise ImportError(
        "idlegrid's generated protocol modules (idlegrid.v1) are missing: install the SDK with pip "
        "(it runs protoc), or build the CMake target idlegrid_python_stubs and add build/gen/python "
        f"to PYTHONPATH ({e})") from e

__all__ = ["pb", "pb_grpc"]
