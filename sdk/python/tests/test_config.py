import os
import tempfile
import unittest

import idlegrid
from idlegrid import ConfigError, resolve_config


class ResolveConfigTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        self.file = os.path.join(self.dir.name, "client.yaml")
        with open(self.file, "w") as f:
            f.write("# written by idlegrid coordinator\naddress: 127.0.0.1:7443\nhttp_address: 127.0.0.1:8443\n"
                    "ca_file: /data/pki/ca.crt\ntoken: file-token\nreceipt_key_fingerprint: sha256:ab\n")

    def test_reads_the_coordinators_client_yaml_named_by_idlegrid_config(self):
        c = resolve_config(environ={"IDLEGRID_CONFIG": self.file})
        self.assertEqual((c.address, c.ca_file, c.token), ("127.0.0.1:7443", "/data/pki/ca.crt", "file-token"))

    def test_explicit_values_beat_the_environment_which_beats_the_file(self):
        env = {"IDLEGRID_CONFIG": self.file, "IDLEGRID_TOKEN": "env-token", "IDLEGRID_ADDR": "env:1"}
        c = resolve_config(address="explicit:2", environ=env)
        self.assertEqual((c.address, c.token, c.ca_file), ("explicit:2", "env-token", "/data/pki/ca.crt"))

    def test_the_default_file_is_under_home(self):
        os.makedirs(os.path.join(self.dir.name, ".config/idlegrid"))
        os.rename(self.file, os.path.join(self.dir.name, ".config/idlegrid/config.yaml"))
        self.assertEqual(resolve_config(environ={"HOME": self.dir.name}).token, "file-token")

    def test_an_explicit_config_file_beats_idlegrid_config(self):
        other = os.path.join(self.dir.name, "other.yaml")
        with open(other, "w") as f:
            f.write("address: a:1\nca_file: ca\ntoken: other-token\n")
        self.assertEqual(resolve_config(config_file=other, environ={"IDLEGRID_CONFIG": self.file}).token,
                         "other-token")

    def test_missing_values_are_named_with_where_they_were_looked_for(self):
        with self.assertRaises(ConfigError) as e:
            resolve_config(environ={"IDLEGRID_ADDR": "a:1", "IDLEGRID_CONFIG": "/nonexistent.yaml"})
        self.assertIn("CA file", e.exception.reason)
        self.assertIn("token", e.exception.reason)
        self.assertNotIn("address", e.exception.reason.split("missing")[1].split(" and no")[0])
        self.assertIn("/nonexistent.yaml", e.exception.reason)
        self.assertEqual(e.exception.code, "INVALID_ARGUMENT")

    def test_malformed_yaml_names_the_file(self):
        with open(self.file, "w") as f:
            f.write("address: [unclosed\n")
        with self.assertRaises(ConfigError) as e:
            resolve_config(environ={"IDLEGRID_CONFIG": self.file})
        self.assertIn(self.file, e.exception.reason)


class ConnectTest(unittest.TestCase):
    def test_an_unreadable_ca_file_is_named(self):
        with self.assertRaises(ConfigError) as e:
            idlegrid.connect(address="127.0.0.1:1", ca_file="/nonexistent/ca.crt", token="t")
        self.assertIn("/nonexistent/ca.crt", e.exception.reason)

    def test_connecting_dials_nothing_until_the_first_call(self):
        with tempfile.NamedTemporaryFile("w", suffix=".crt") as ca:
            ca.write("not a certificate, never read by TLS until a call\n")
            ca.flush()
            with idlegrid.connect(address="127.0.0.1:1", ca_file=ca.name, token="t", timeout=5) as grid:
                with self.assertRaises(idlegrid.Unavailable):
                    grid.jobs()


if __name__ == "__main__":
    unittest.main()
