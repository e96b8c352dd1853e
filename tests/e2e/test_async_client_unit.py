"""Unit tests of cortexstream.AsyncClient against the fake ROUTER
(fake_server.py): the calls of Client as coroutines, and several tasks
sharing one connection (one reads the socket, the others get their messages
filed by id)."""

import asyncio
import unittest

import msgpack
import zmq

from tests.e2e import support  # noqa: F401  (puts clients/python on sys.path)
import cortexstream
from tests.e2e.fake_server import FakeServer, fake_chat_prompt, fake_text


class AsyncClientUnitTest(unittest.IsolatedAsyncioTestCase):
    async def asyncSetUp(self):
        self.server = FakeServer()
        self.client = cortexstream.AsyncClient(self.server.endpoint, timeout_s=5)

    async def asyncTearDown(self):
        self.client.close()
        self.server.close()

    async def test_submit_streams_accepted_chunks_finished(self):
        s = await self.client.submit(prompt="hello", id="a", max_tokens=5, temperature=0)
        events = [e async for e in s]
        self.assertEqual(events[0]["t"], "accepted")
        self.assertEqual(events[-1]["t"], "finished")
        self.assertTrue(s.done)
        self.assertIs(s.finished, events[-1])
        self.assertEqual([e["seq"] for e in events], list(range(len(events))))
        self.assertEqual("".join(e.get("text", "") for e in events[1:]), fake_text("hello"))
        sent = self.server.received[-1]
        self.assertEqual(sent["params"], {"max_tokens": 5, "temperature": 0.0})
        self.assertIsInstance(sent["params"]["temperature"], float)

    async def test_complete_with_messages_non_streamed(self):
        chat = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
        text, fin = await self.client.complete(messages=chat, chat_template_kwargs={"x": [1, 2]}, stream=False,
                                               tags={"k": "v"}, logprobs=2)
        self.assertEqual(text, fake_text(fake_chat_prompt(chat)))
        self.assertEqual(fin["reason"], "length")
        sent = self.server.received[-1]
        self.assertEqual((sent["messages"], sent["chat_template_kwargs"]), (chat, {"x": [1, 2]}))
        self.assertIs(sent["stream"], False)
        self.assertEqual((sent["tags"], sent["want"]), ({"k": "v"}, {"logprobs": 2}))

    async def test_concurrent_tasks_share_one_connection(self):
        prompts = ["first prompt", "second", "a third, longer prompt"]
        streams = [await self.client.submit(prompt=p) for p in prompts]
        # Streams read by separate tasks, with connection-level calls among them.
        results = await asyncio.gather(*(s.result() for s in reversed(streams)), self.client.ping(nonce="n"),
                                       self.client.health(), self.client.models(), self.client.stats())
        texts = [r[0] for r in results[:3]]
        self.assertEqual(texts, [fake_text(p) for p in reversed(prompts)])
        pong, health, models, stats = results[3:]
        self.assertEqual((pong["nonce"], health["status"], models[0]["name"]), ("n", "ready", "fake"))
        self.assertIn("kv_blocks_used", stats)
        for s in streams:
            self.assertTrue(all(e["id"] == s.id for e in s.events))
            self.assertEqual([e["seq"] for e in s.events], list(range(len(s.events))))
        self.assertEqual(self.client.pending(), [])

    async def test_error_is_raised_by_complete_and_yielded_by_stream(self):
        with self.assertRaises(cortexstream.CortexError) as cm:
            await self.client.complete(tokens=[1, 2])  # the fake wants a prompt
        self.assertEqual((cm.exception.code, cm.exception.name), (400, "invalid_param"))
        s = await self.client.submit(tokens=[1], id="e")
        self.assertEqual([e["t"] async for e in s], ["error"])
        self.assertIsNotNone(s.error)

    async def test_cancel_one_and_many(self):
        s1 = await self.client.submit(prompt="forever", id="f1")
        s2 = await self.client.submit(prompt="forever", id="f2")
        self.assertEqual((await s1.__anext__())["t"], "accepted")
        self.assertEqual((await s2.__anext__())["t"], "accepted")
        await s1.cancel()
        self.assertEqual([e async for e in s1][-1]["reason"], "cancelled")
        await self.client.cancel(["f2", "nope"])
        self.assertEqual([e async for e in s2][-1]["reason"], "cancelled")
        self.assertEqual(self.server.received[-1], {"v": 1, "t": "cancel", "ids": ["f2", "nope"]})

    async def test_a_task_cancelled_while_reading_hands_over(self):
        s = await self.client.submit(prompt="forever", id="f")
        self.assertEqual((await s.__anext__())["t"], "accepted")
        # A reader task that is cancelled mid-wait must not strand the others.
        reader = asyncio.ensure_future(self.client.recv(timeout_s=5))
        await asyncio.sleep(0.05)
        reader.cancel()
        with self.assertRaises(asyncio.CancelledError):
            await reader
        self.assertEqual((await s.__anext__())["t"], "chunk")
        await s.cancel()
        self.assertEqual((await s.result())[1]["reason"], "cancelled")

    async def test_raw_send_recv_track_and_duplicates(self):
        await self.client.send(b"\xc1")
        m = await self.client.recv()
        self.assertEqual((m["t"], m["code"], m["name"]), ("error", 400, "malformed"))
        await self.client.send(msgpack.packb([1, 2]))
        self.assertEqual((await self.client.recv())["name"], "malformed")
        await self.client.send({"v": 1, "t": "submit", "id": "raw", "prompt": "q", "bogus": 1})
        first = await self.client.recv()
        self.assertEqual((first["t"], first["ignored"]), ("accepted", ["bogus"]))
        s = self.client.track("raw")
        self.assertEqual("".join([e.get("text", "") async for e in s]), fake_text("q"))
        d = await self.client.submit(prompt="forever", id="d")
        with self.assertRaises(ValueError):
            await self.client.submit(prompt="x", id="d")
        await d.cancel()
        self.assertEqual((await d.result())[1]["reason"], "cancelled")

    async def test_timeout(self):
        c = cortexstream.AsyncClient("tcp://127.0.0.1:1", timeout_s=0.2)
        try:
            with self.assertRaises(cortexstream.CortexTimeout):
                await c.ping()
            # Two waiters at once: the one not reading times out too.
            results = await asyncio.gather(c.health(), c.stats(), return_exceptions=True)
            self.assertTrue(all(isinstance(r, cortexstream.CortexTimeout) for r in results), results)
        finally:
            c.close()


class AsyncClientCredentialsUnitTest(unittest.IsolatedAsyncioTestCase):
    """CURVE and ``auth`` reach the socket and the submit as in Client (the
    logic is shared in protocol.py and _transport.py; this checks AsyncClient passes them on)."""

    async def test_curve_client_and_auth(self):
        server_pub, server_secret = zmq.curve_keypair()
        pub, secret = zmq.curve_keypair()
        server = FakeServer(curve_secret_key=server_secret)
        c = cortexstream.AsyncClient(server.endpoint, timeout_s=5, server_key=server_pub, secret_key=secret,
                                     auth="cs-async")
        plain = cortexstream.AsyncClient(server.endpoint, timeout_s=1)
        try:
            self.assertEqual((await c.complete(prompt="hey"))[0], fake_text("hey"))
            self.assertEqual(server.curve_clients, [pub.decode()])
            self.assertEqual(server.received[-1]["auth"], "cs-async")
            with self.assertRaises(cortexstream.CortexTimeout):
                await plain.ping()
            with self.assertRaises(ValueError):
                cortexstream.AsyncClient(server.endpoint, server_key=server_pub)
        finally:
            c.close()
            plain.close()
            server.close()


if __name__ == "__main__":
    unittest.main()
