import unittest

import grpc

import idlegrid
from idlegrid.errors import from_rpc_error, from_status


class FakeRpcError(grpc.RpcError):
    def __init__(self, code, details):
        self._code, self._details = code, details

    def code(self):
        return self._code

    def details(self):
        return self._details


class ErrorsTest(unittest.TestCase):
    def test_each_grpc_code_maps_to_its_own_type_keeping_the_servers_reason(self):
        for code, cls in [(grpc.StatusCode.NOT_FOUND, idlegrid.NotFound),
                          (grpc.StatusCode.INVALID_ARGUMENT, idlegrid.InvalidArgument),
                          (grpc.StatusCode.PERMISSION_DENIED, idlegrid.PermissionDenied),
                          (grpc.StatusCode.UNAUTHENTICATED, idlegrid.Unauthenticated),
                          (grpc.StatusCode.FAILED_PRECONDITION, idlegrid.FailedPrecondition),
                          (grpc.StatusCode.RESOURCE_EXHAUSTED, idlegrid.ResourceExhausted),
                          (grpc.StatusCode.UNAVAILABLE, idlegrid.Unavailable),
                          (grpc.StatusCode.DATA_LOSS, idlegrid.DataLoss)]:
            e = from_rpc_error(FakeRpcError(code, "job j-1 not found"))
            self.assertIs(type(e), cls, code)
            self.assertEqual(e.reason, "job j-1 not found")
            self.assertEqual(e.code, code.name)
            self.assertIsInstance(e, idlegrid.IdlegridError)

    def test_an_unknown_code_is_the_base_type(self):
        e = from_status("SOMETHING_NEW", "why")
        self.assertIs(type(e), idlegrid.IdlegridError)
        self.assertEqual(e.code, "SOMETHING_NEW")

    def test_the_item_a_reason_names_is_its_index(self):
        e = from_status("INVALID_ARGUMENT", "spec.args[1]: uses {{.seed}}, which array.items[17] does not have")
        self.assertEqual(e.item_index, 17)
        self.assertIsNone(from_status("NOT_FOUND", "job j-1 not found").item_index)

    def test_task_failed_says_which_task_and_why(self):
        e = idlegrid.TaskFailed(3, "FAILED", "NONZERO_EXIT", "exit code 2")
        self.assertEqual(str(e), "task 3 ended FAILED (NONZERO_EXIT): exit code 2")
        self.assertEqual((e.index, e.failure_reason), (3, "NONZERO_EXIT"))


if __name__ == "__main__":
    unittest.main()
