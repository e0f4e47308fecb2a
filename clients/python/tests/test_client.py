"""The client against a real `snowmint serve` (SNOWMINT_URL, started with --datacenter 1
--worker 7), and against stand-ins on loopback for what a healthy server never does."""

from __future__ import annotations

import threading
import unittest
import urllib.request
from typing import List, Optional, Tuple

from snowmint import Client, ConfigError, ConnectionError, ServerError, decode

from .support import SERVER, Silent, Stub, closed_port, needs_server

#: How long a test waits for an event before it fails instead of hanging.
WAIT_S = 10


class Recorder(urllib.request.BaseHandler):
    """Records each request's URL and how many ids the client held when it began; holds a
    request back when asked, until released."""

    def __init__(self) -> None:
        self.client: Optional[Client] = None
        self.calls: List[Tuple[str, int]] = []
        self._hold: Optional[threading.Event] = None
        self.entered = threading.Event()

    def http_request(self, request: urllib.request.Request) -> urllib.request.Request:
        assert self.client is not None
        self.calls.append((request.full_url, self.client.buffered))
        hold = self._hold
        if hold is not None:
            self._hold = None
            self.entered.set()
            assert hold.wait(WAIT_S), "the held request was never released"
        return request

    def hold_next(self) -> threading.Event:
        self._hold = threading.Event()
        return self._hold


def recording(**options: object) -> Tuple[Client, Recorder]:
    recorder = Recorder()
    client = Client(SERVER, opener=urllib.request.build_opener(recorder), **options)  # type: ignore[arg-type]
    recorder.client = client
    return client, recorder


class AgainstTheServer(unittest.TestCase):
    def assert_increasing_and_ours(self, ids: List[int]) -> None:
        self.assertEqual(len(set(ids)), len(ids))
        self.assertEqual(ids, sorted(ids))
        for id in ids:
            self.assertIsInstance(id, int)
            parts = decode(id, "twitter")
            self.assertEqual((parts.datacenter, parts.worker), (1, 7), id)

    @needs_server
    def test_one_id_then_a_batch_distinct_increasing_from_datacenter_1_worker_7(self) -> None:
        client = Client(SERVER)
        ids = [client.next_id(), client.next_id(), *client.next_ids(5), client.next_id()]
        self.assertEqual(len(ids), 8)
        self.assert_increasing_and_ours(ids)

    @needs_server
    def test_the_buffer_is_refilled_in_the_background_before_it_runs_dry(self) -> None:
        client, recorder = recording(batch_size=10, refill_below=3)
        url = f"{SERVER}/v1/ids?count=10"
        ids = [client.next_id() for _ in range(7)]
        self.assertEqual(recorder.calls, [(url, 0)])
        # The 8th id leaves 2, below the threshold: a refill begins while ids remain.
        release = recorder.hold_next()
        ids.append(client.next_id())
        self.assertTrue(recorder.entered.wait(WAIT_S))
        self.assertEqual(recorder.calls, [(url, 0), (url, 2)])
        # The 2 left are handed out while the refill is held; nothing asks again.
        ids += [client.next_id(), client.next_id()]
        self.assertEqual((client.buffered, len(recorder.calls)), (0, 2))
        release.set()
        # The next call waits for that refill instead of asking again.
        ids.append(client.next_id())
        self.assertEqual((client.buffered, len(recorder.calls)), (9, 2))
        ids += [client.next_id() for _ in range(30)]
        self.assertGreaterEqual(len(recorder.calls), 5)
        self.assert_increasing_and_ours(ids)

    @needs_server
    def test_a_batch_larger_than_the_buffer_takes_it_then_the_rest_in_parts(self) -> None:
        client, recorder = recording(batch_size=10, refill_below=0, max_batch=40)
        first = client.next_id()
        ids = client.next_ids(100)
        self.assertEqual(
            [url for url, _ in recorder.calls],
            [f"{SERVER}/v1/ids?count={n}" for n in (10, 40, 40, 11)],
        )
        self.assertEqual((len(ids), client.buffered), (100, 0))
        self.assert_increasing_and_ours([first, *ids, client.next_id()])

    @needs_server
    def test_a_batch_size_of_1_takes_ids_one_by_one_from_v1_id(self) -> None:
        client, recorder = recording(batch_size=1)
        ids = [client.next_id(), *client.next_ids(1)]
        self.assertEqual([url for url, _ in recorder.calls], [f"{SERVER}/v1/id"] * 2)
        self.assert_increasing_and_ours(ids)

    @needs_server
    def test_the_servers_error_has_its_status_and_text_and_the_buffer_keeps_its_ids(self) -> None:
        detail = 'count "150000" is out of range: expected a whole number 1..=100000'
        client = Client(SERVER, batch_size=150000, max_batch=200000)
        for call in (client.next_id, lambda: client.next_ids(150000)):
            with self.assertRaises(ServerError) as caught:
                call()
            self.assertEqual(caught.exception.status, 400)
            self.assertEqual(caught.exception.detail, detail)
            self.assertEqual(
                str(caught.exception),
                f"server answered 400 Bad Request to {SERVER}/v1/ids?count=150000: {detail}",
            )
        small = Client(SERVER, batch_size=10, max_batch=200000)
        small.next_id()
        with self.assertRaises(ServerError):
            small.next_ids(150000)
        self.assertEqual(small.buffered, 9)


class WhenTheServerFails(unittest.TestCase):
    def test_an_unreachable_server_is_a_request_error_naming_the_url(self) -> None:
        port = closed_port()
        with self.assertRaises(ConnectionError) as caught:
            Client(f"http://127.0.0.1:{port}").next_id()
        self.assertEqual(
            str(caught.exception),
            f"cannot reach http://127.0.0.1:{port}/v1/ids?count=100: connection refused",
        )

    def test_a_server_that_never_answers_is_a_request_error_after_the_timeout(self) -> None:
        with Silent() as silent:
            with self.assertRaises(ConnectionError) as caught:
                Client(silent.url, timeout=0.2).next_ids(3)
        self.assertEqual(
            str(caught.exception), f"no answer from {silent.url}/v1/ids?count=3 within 0.2 s"
        )

    def test_the_token_goes_as_a_bearer_header_and_a_refusal_carries_the_servers_text(self) -> None:
        refusal = "missing or wrong bearer token: send `Authorization: Bearer <token>`"
        with Stub(lambda n, req: (401, {"error": refusal}, "application/json")) as stub:
            with self.assertRaises(ServerError) as caught:
                Client(stub.url + "/", token="s3cret").next_id()
            self.assertEqual(stub.requests[0][1]["Authorization"], "Bearer s3cret")
        self.assertEqual(caught.exception.status, 401)
        self.assertEqual(
            str(caught.exception),
            f"server answered 401 Unauthorized to {stub.url}/v1/ids?count=100: {refusal}",
        )

    def test_a_base_urls_path_is_kept_and_an_answer_with_no_json_or_no_ids_is_an_error(self) -> None:
        answers = {
            1: (502, "<html>bad gateway</html>\n", "text/html"),
            2: (200, "not json", "application/json"),
            3: (200, {"ids": [1, 2]}, "application/json"),
        }
        with Stub(lambda n, req: answers[n]) as stub:
            base = f"{stub.url}/snowmint"
            client = Client(base)
            messages = []
            for _ in answers:
                with self.assertRaises(ServerError) as caught:
                    client.next_ids(2)
                messages.append(str(caught.exception))
            self.assertEqual([path for path, _ in stub.requests], ["/snowmint/v1/ids?count=2"] * 3)
        url = f"{base}/v1/ids?count=2"
        self.assertEqual(
            messages,
            [
                f"server answered 502 Bad Gateway to {url}: <html>bad gateway</html>",
                f"server answered {url} with no JSON: not json",
                f'server answered {url} without an "ids" list of 2 decimal strings',
            ],
        )

    def test_a_refill_that_fails_reaches_the_call_that_finds_the_buffer_empty(self) -> None:
        state = {"failing": False, "next": 1}

        def answer(n: int, req: object) -> Tuple[int, object, str]:
            if state["failing"]:
                return 503, {"error": "not ready: lease lost"}, "application/json"
            ids = [str(state["next"] + i) for i in range(4)]
            state["next"] += 4
            return 200, {"ids": ids}, "application/json"

        with Stub(answer) as stub:
            client = Client(stub.url, batch_size=4, refill_below=2)
            ids = [client.next_id()]
            state["failing"] = True
            ids += [client.next_id() for _ in range(3)]
            self.assertEqual(ids, [1, 2, 3, 4])
            with self.assertRaises(ServerError) as caught:
                client.next_id()
            self.assertEqual((caught.exception.status, caught.exception.detail), (503, "not ready: lease lost"))
            # The next call tries again.
            state["failing"] = False
            self.assertEqual(client.next_id(), 5)


class Settings(unittest.TestCase):
    def test_settings_out_of_range_are_refused_naming_the_value_and_the_limit(self) -> None:
        cases = [
            (("localhost:8080",), {}, "base url 'localhost:8080' must start with http:// or https://"),
            (("http://h",), {"batch_size": 0}, "batch size 0 is out of range 1..=100000 (the max batch)"),
            (("http://h",), {"batch_size": 100001}, "batch size 100001 is out of range 1..=100000 (the max batch)"),
            (("http://h",), {"batch_size": 10, "refill_below": 11}, "refill threshold 11 is out of range 0..=10 (the batch size)"),
            (("http://h",), {"max_batch": 0}, "max batch 0 is out of range: expected 1 or more"),
            (("http://h",), {"timeout": 0}, "timeout 0 is out of range: expected seconds above 0"),
        ]
        for args, options, message in cases:
            with self.subTest(options=options):
                with self.assertRaises(ConfigError) as caught:
                    Client(*args, **options)  # type: ignore[arg-type]
                self.assertEqual(str(caught.exception), message)

    def test_a_count_below_1_is_a_value_error(self) -> None:
        client = Client("http://127.0.0.1:9")
        with self.assertRaisesRegex(ValueError, "^count 0 is out of range: expected 1 or more$"):
            client.next_ids(0)
        with self.assertRaisesRegex(TypeError, "^count must be an int, got float$"):
            client.next_ids(2.5)  # type: ignore[arg-type]
