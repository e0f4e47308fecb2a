"""The client over TLS: a real `snowmint serve --tls-cert ... --tls-key ... --tls-client-ca
...` (SNOWMINT_TLS_URL, started with --datacenter 1 --worker 7) whose CA is SNOWMINT_CA, and
which takes the client certificate SNOWMINT_CLIENT_CERT with its key SNOWMINT_CLIENT_KEY."""

from __future__ import annotations

import os
import tempfile
import unittest

from snowmint import Client, ConfigError, ConnectionError, decode

from .support import CA, CLIENT_CERT, CLIENT_KEY, TLS_SERVER, needs_tls_server


class OverTLS(unittest.TestCase):
    @needs_tls_server
    def test_ids_come_over_https_from_a_server_the_ca_file_vouches_for(self) -> None:
        client = Client(
            TLS_SERVER, ca_file=CA, cert_file=CLIENT_CERT, key_file=CLIENT_KEY, batch_size=10
        )
        ids = [client.next_id(), *client.next_ids(20)]
        self.assertEqual(ids, sorted(set(ids)))
        parts = decode(ids[0], "twitter")
        self.assertEqual((parts.datacenter, parts.worker), (1, 7))

    @needs_tls_server
    def test_without_the_ca_file_the_servers_certificate_is_not_trusted(self) -> None:
        with self.assertRaises(ConnectionError) as caught:
            Client(TLS_SERVER).next_id()
        message = str(caught.exception)
        self.assertIn(f"cannot reach {TLS_SERVER}/v1/ids?count=100: ", message)
        self.assertIn("the server's certificate is not trusted: ", message)

    @needs_tls_server
    def test_without_a_client_certificate_the_server_refuses(self) -> None:
        with self.assertRaises(ConnectionError) as caught:
            Client(TLS_SERVER, ca_file=CA).next_id()
        self.assertIn(f"cannot reach {TLS_SERVER}/v1/ids?count=100: ", str(caught.exception))


class TlsSettings(unittest.TestCase):
    def test_a_ca_file_that_cannot_be_read_is_named(self) -> None:
        with self.assertRaises(ConfigError) as caught:
            Client("https://localhost:8443", ca_file="/nonexistent/ca.pem")
        self.assertEqual(
            str(caught.exception), "ca_file '/nonexistent/ca.pem': no such file or directory"
        )

    def test_a_ca_file_with_no_certificate_is_named(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            empty = os.path.join(tmp, "empty.pem")
            with open(empty, "w") as f:
                f.write("nothing here\n")
            with self.assertRaises(ConfigError) as caught:
                Client("https://localhost:8443", ca_file=empty)
        self.assertTrue(str(caught.exception).startswith(f"ca_file {empty!r}: "), caught.exception)

    def test_a_certificate_without_its_key_is_refused(self) -> None:
        with self.assertRaises(ConfigError) as caught:
            Client("https://localhost:8443", cert_file="/etc/client.pem")
        self.assertEqual(
            str(caught.exception), "cert_file and key_file go together: give both or neither"
        )
