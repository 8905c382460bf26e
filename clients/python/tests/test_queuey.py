"""Tests of the queuey package, as installed: the wire format's test
vectors (no broker needed), and enqueues against the broker at
QUEUEY_AMQP_URL (skipped when none answers, unless CI or
QUEUEY_REQUIRE_BROKER is set). The vectors are read from
QUEUEY_WIRE_VECTORS, by default the repository's testdata/wire.

    python3 -m venv --system-site-packages /tmp/q && /tmp/q/bin/pip install --no-index --no-build-isolation ./clients/python
    /tmp/q/bin/python -m unittest discover -s clients/python/tests -v
"""

import base64
import binascii
import datetime
import glob
import json
import os
import socket
import sys
import time
import unittest
import urllib.parse
import uuid

import msgpack
import pika

import queuey

WIRE = os.environ.get("QUEUEY_WIRE_VECTORS") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "testdata", "wire")


def load(pattern):
    files = sorted(glob.glob(os.path.join(WIRE, pattern)))
    if not files:
        raise AssertionError(f"no test vectors at {WIRE}/{pattern}")
    for path in files:
        with open(path, encoding="utf-8") as f:
            yield json.load(f)


def from_json(v):
    """The payload as the vectors write it in JSON, as msgpack decodes it."""
    if isinstance(v, dict):
        if set(v) == {"$bytes"}:
            return base64.b64decode(v["$bytes"])
        if set(v) == {"$int"}:
            return int(v["$int"])
        if set(v) == {"$time"}:
            return v["$time"]
        return {k: from_json(x) for k, x in v.items()}
    if isinstance(v, list):
        return [from_json(x) for x in v]
    return v


def normalize(v):
    """A decoded payload with timestamps as the vectors write them."""
    if isinstance(v, msgpack.Timestamp):
        dt = datetime.datetime.fromtimestamp(v.seconds, datetime.timezone.utc)
        return dt.strftime("%Y-%m-%dT%H:%M:%S") + (f".{v.nanoseconds:09d}".rstrip("0") if v.nanoseconds else "") + "Z"
    if isinstance(v, dict):
        return {k: normalize(x) for k, x in v.items()}
    if isinstance(v, list):
        return [normalize(x) for x in v]
    return v


def envelope_of(vec):
    e = vec["envelope"]
    return queuey.Envelope(
        id=e["id"], queue=e["queue"], kind=e["kind"], payload=bytes.fromhex(vec["payload_hex"]),
        attempt=e["attempt"], max_attempts=e["max_attempts"], priority=e["priority"],
        enqueued_at_ns=int(e["enqueued_at_ns"]), last_error=e["last_error"], headers=e["headers"],
    )


class Vectors(unittest.TestCase):
    def test_decode_and_encode(self):
        for vec in load("*.json"):
            with self.subTest(vec["name"]):
                p = vec["properties"]
                body = bytes.fromhex(vec["body_hex"])
                got = queuey.decode_body(body, content_type=p["content_type"], message_id=p["message_id"], kind=p["type"])
                want = envelope_of(vec)
                if want.headers == {}:
                    self.assertEqual(got.headers, {})
                self.assertEqual(got, want)
                self.assertEqual(p["content_type"], queuey.CONTENT_TYPE)
                self.assertEqual(p["delivery_mode"], 2)
                if not vec.get("decode_only"):
                    self.assertEqual(queuey.encode_body(want).hex(), vec["body_hex"])
                    ts = int(vec["envelope"]["enqueued_at_ns"]) // 1_000_000_000
                    self.assertEqual(p.get("timestamp"), ts or None)
                payload = msgpack.unpackb(bytes.fromhex(vec["payload_hex"]), raw=False, strict_map_key=False)
                self.assertEqual(normalize(payload), from_json(vec["payload"]))

    def test_payload_reencodes(self):
        # A payload decoded and encoded again decodes to the same values
        # (its bytes may differ: Go writes some integers wider).
        for vec in load("*.json"):
            with self.subTest(vec["name"]):
                raw = bytes.fromhex(vec["payload_hex"])
                decoded = msgpack.unpackb(raw, raw=False, strict_map_key=False, timestamp=0)
                if not isinstance(decoded, dict):
                    continue
                again = queuey.encode_payload(decoded)
                self.assertEqual(
                    msgpack.unpackb(again, raw=False, strict_map_key=False, timestamp=0),
                    msgpack.unpackb(raw, raw=False, strict_map_key=False, timestamp=0),
                )

    def test_delays(self):
        for vec in load("*.json"):
            d = vec.get("delay")
            if not d:
                continue
            with self.subTest(vec["name"]):
                delay = datetime.timedelta(milliseconds=d["delay_ms"])
                if d["mode"] == "plugin":
                    ms = queuey._round(queuey._delay_ns(delay), d["granularity_ms"])
                    self.assertEqual(vec["headers"], {"x-delay": ms})
                    self.assertEqual(vec["publish"], {"exchange": vec["envelope"]["queue"] + ".delay", "routing_key": vec["envelope"]["queue"], "mandatory": False})
                    continue
                name, args, _ = queuey.hold_queue(vec["envelope"]["queue"], delay, queue_type=d["queue_type"], granularity_ms=d["granularity_ms"])
                self.assertEqual({"name": name, "arguments": args}, vec["hold_queue"])
                self.assertEqual(vec["publish"], {"exchange": "", "routing_key": name, "mandatory": True})

    def test_ladder(self):
        # Where a delayed enqueue onto a ladder-mode queue goes, or why it
        # is refused, as the Go backend's topology.Ladder says.
        reasons = {"delay_too_long": "over the longest wait", "name_too_long": "a ladder-mode queue's name is at most"}
        for vec in load("ladder/*.json"):
            with self.subTest(vec["name"]):
                delay = datetime.timedelta(milliseconds=vec["delay_ms"])
                opts = dict(queue_type=vec["queue_type"], granularity_ms=vec["granularity_ms"])
                # A ladder is split when quorum on a 4.x broker.
                self.assertEqual(vec["split"], vec["queue_type"] == "quorum" and int(vec["broker"].split(".")[0]) >= 4)
                self.assertEqual(queuey.ladder_levels(vec["granularity_ms"]), vec["levels"])
                if vec.get("refused"):
                    with self.assertRaisesRegex(queuey.InvalidJobError, reasons[vec["refused"]]):
                        queuey.ladder_wait(vec["queue"], delay, **opts)
                    # enqueue refuses it before it publishes: it has no
                    # channel to publish on.
                    with self.assertRaisesRegex(queuey.InvalidJobError, reasons[vec["refused"]]):
                        queuey.enqueue(None, vec["queue"], "p.T", {}, delay=delay, delay_mode="ladder", **opts)
                    continue
                exchange, key, wait = queuey.ladder_wait(vec["queue"], delay, priority=vec["priority"], split=vec["split"], **opts)
                self.assertEqual({"exchange": exchange, "routing_key": key, "mandatory": True}, vec["publish"])
                self.assertEqual(wait, vec["wait_ms"])
                self.assertLessEqual(len(key.encode()), 255)

    def test_invalid(self):
        for vec in load("invalid/*.json"):
            with self.subTest(vec["name"]):
                p = vec["properties"]
                message_id = bytes.fromhex(p["message_id_hex"]) if p.get("message_id_hex") else p["message_id"]
                with self.assertRaises(queuey.InvalidEnvelopeError):
                    queuey.decode_body(bytes.fromhex(vec["body_hex"]), content_type=p["content_type"], message_id=message_id,
                                       kind=p["type"], expiration=p.get("expiration"))


class Units(unittest.TestCase):
    def test_ladder(self):
        rungs = [queuey.quorum_rung(u * 1000) // 1000 for u in range(1, 42)]
        self.assertEqual(sorted(set(rungs)), [1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 24, 28, 32, 40, 48])
        self.assertEqual(queuey.quorum_rung(3600 * 1000), 4096 * 1000)

    def test_limits(self):
        longest = (2**32 - 1) // 2 // 1000 * 1000  # ms, at 1s granularity
        self.assertEqual(queuey._round(longest * 1_000_000, 1000), longest)
        with self.assertRaises(queuey.InvalidJobError):
            queuey._round((longest + 1) * 1_000_000, 1000)
        self.assertEqual(queuey._round(1, 1000), 1000)
        self.assertEqual(queuey._round(queuey._delay_ns(datetime.timedelta(seconds=1.5)), 1000), 2000)
        self.assertEqual(queuey._round(queuey._delay_ns(datetime.timedelta(milliseconds=100)), 1), 100)

    def test_ladder_refuses(self):
        second = datetime.timedelta(seconds=1)
        with self.assertRaisesRegex(queuey.InvalidJobError, "want 0 or more"):
            queuey.ladder_wait("q", -second)
        with self.assertRaisesRegex(queuey.InvalidJobError, "want 0 or more"):
            queuey.enqueue(None, "q", "p.T", {}, delay=-second, delay_mode="ladder")
        with self.assertRaisesRegex(queuey.InvalidJobError, "queue_type = 'stream'"):
            queuey.ladder_wait("q", second, queue_type="stream")
        with self.assertRaisesRegex(queuey.InvalidJobError, "granularity_ms = 0"):
            queuey.ladder_wait("q", second, granularity_ms=0)
        with self.assertRaisesRegex(queuey.InvalidJobError, "want 'queue', 'ladder' or 'plugin'"):
            queuey.enqueue(None, "q", "p.T", {}, delay=second, delay_mode="ladders")
        with self.assertRaisesRegex(queuey.InvalidJobError, "over the longest wait"):
            queuey.enqueue(None, "q", "p.T", {}, delay=datetime.timedelta(days=25), delay_mode="ladder")
        # A name's length is in bytes: 106 two-byte letters are 212.
        with self.assertRaisesRegex(queuey.InvalidJobError, "is 212 bytes"):
            queuey.ladder_wait("é" * 106, second)
        # Zero waits one granularity, as a worker's wait of zero does; an
        # enqueue with no delay is not a wait at all.
        self.assertEqual(queuey.ladder_wait("q", datetime.timedelta(0)), ("queuey.ladder.classic.1000ms.00", "0." * 21 + "1.q", 1000))
        # Only a quorum ladder is split; a priority is a byte.
        with self.assertRaisesRegex(queuey.InvalidJobError, "only a quorum ladder on RabbitMQ 4.x is split"):
            queuey.ladder_wait("q", second, split=True)
        with self.assertRaisesRegex(queuey.InvalidJobError, "priority = 256"):
            queuey.ladder_wait("q", second, queue_type="quorum", priority=256, split=True)

    def test_default_delay(self):
        # As Go's runtime.DefaultDelay: the ladder for a quorum queue, hold
        # queues for a classic one.
        self.assertEqual(queuey.default_delay("quorum"), "ladder")
        self.assertEqual(queuey.default_delay("classic"), "queue")
        second = datetime.timedelta(seconds=1)
        # Given no delay_mode, a delayed enqueue onto a quorum queue is a
        # ladder wait: a name of 212 bytes is too long for its routing key
        # (211 at 1000 ms), and refused before anything is published.
        name = "q" * 212
        with self.assertRaisesRegex(queuey.InvalidJobError, "is 212 bytes: a ladder-mode queue's name"):
            queuey.enqueue(None, name, "p.T", {}, delay=second, queue_type="quorum")
        # A hold queue takes the name, and so does a classic queue by
        # default or a quorum one told delay_mode="queue": the enqueue gets
        # as far as the channel it was not given.
        class NotAChannel:
            pass

        for opts in [{}, {"queue_type": "classic"}, {"queue_type": "quorum", "delay_mode": "queue"}]:
            with self.subTest(opts):
                with self.assertRaisesRegex(TypeError, "want a pika BlockingConnection or BlockingChannel, not NotAChannel"):
                    queuey.enqueue(NotAChannel(), name, "p.T", {}, delay=second, **opts)

    def test_delay_is_a_timedelta(self):
        # A number has no unit: seconds in one language, milliseconds in
        # another. Only a timedelta is taken, nothing is published.
        for delay in [30, 1.5, "30s", True]:
            with self.subTest(delay=delay):
                with self.assertRaisesRegex(queuey.InvalidJobError, "want a datetime.timedelta"):
                    queuey.enqueue(None, "q", "p.T", {}, delay=delay)
                with self.assertRaisesRegex(queuey.InvalidJobError, "want a datetime.timedelta"):
                    queuey.hold_queue("q", delay)

    def test_priority_within_max_priority(self):
        # As Go's producer: a priority above the queue's max_priority is
        # refused before anything is published.
        with self.assertRaisesRegex(queuey.InvalidJobError, r"priority 9, want 0\.\.3 \(the queue's max_priority\)"):
            queuey.enqueue(None, "q", "p.T", {}, priority=9, max_priority=3)
        with self.assertRaisesRegex(queuey.InvalidJobError, r"priority 11, want 0\.\.10"):
            queuey.enqueue(None, "q", "p.T", {}, priority=11)
        with self.assertRaisesRegex(queuey.InvalidJobError, "declares no priority"):
            queuey.enqueue(None, "q", "p.T", {}, priority=1, max_priority=0)
        with self.assertRaises(TypeError):
            queuey.enqueue(None, "q", "p.T", {}, max_attempts=3)  # the queue's, not the producer's

    def test_installed(self):
        # The package under test is the installed one, not the source.
        src = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
        self.assertFalse(os.path.realpath(queuey.__file__).startswith(src + os.sep), queuey.__file__)

    def test_new_id(self):
        a, b = queuey.new_id(), queuey.new_id()
        self.assertNotEqual(a, b)
        u = uuid.UUID(a)
        self.assertEqual(u.version, 7)
        self.assertAlmostEqual(int(a.replace("-", "")[:12], 16) / 1000, time.time(), delta=5)

    def test_refuses(self):
        env = queuey.Envelope(id="x", queue="q", kind="p.T", payload=b"\x80")
        for change in [
            {"id": ""}, {"id": "i" * 256}, {"queue": ""}, {"kind": "k" * 256}, {"attempt": 0},
            {"max_attempts": 2**31}, {"priority": 256}, {"priority": -1}, {"headers": {"a": 1}}, {"payload": b""},
        ]:
            with self.subTest(change):
                bad = queuey.Envelope(**{**env.__dict__, **change})
                with self.assertRaises(queuey.InvalidJobError):
                    queuey.encode_body(bad)
        with self.assertRaises(queuey.InvalidJobError):
            queuey.enqueue(None, "q", "p.T", {}, headers={"queuey-tick": "x"})
        with self.assertRaises(queuey.InvalidJobError):
            queuey.enqueue(None, "q", "p.T", [1, 2])


def broker_url():
    return os.environ.get("QUEUEY_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/")


def broker_answers():
    u = urllib.parse.urlparse(broker_url())
    try:
        socket.create_connection((u.hostname or "127.0.0.1", u.port or 5672), timeout=2).close()
        return True
    except OSError:
        return False


class Broker(unittest.TestCase):
    """Enqueues against the broker, onto queues of its own, and reads what
    arrived with the reference rules (decode_body)."""

    def setUp(self):
        if not broker_answers():
            if os.environ.get("CI") or os.environ.get("QUEUEY_REQUIRE_BROKER"):
                self.fail(f"no broker answers at {broker_url()}")
            self.skipTest(f"no broker answers at {broker_url()} (is rabbitmq-server running?)")
        self.conn = pika.BlockingConnection(pika.URLParameters(broker_url()))
        self.admin = self.conn.channel()
        self.queue = f"pyclient.{uuid.uuid4().hex[:12]}"
        self.created = [self.queue]
        self.admin.queue_declare(self.queue, durable=True, arguments={"x-max-priority": 10})

    def tearDown(self):
        if not hasattr(self, "conn"):
            return
        ch = self.conn.channel()
        for q in self.created:
            ch.queue_delete(q)
        self.conn.close()

    def get(self, queue, timeout=10):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            method, props, body = self.admin.basic_get(queue, auto_ack=True)
            if method:
                return props, body
            time.sleep(0.02)
        self.fail(f"nothing arrived on {queue} within {timeout}s")

    def test_enqueue(self):
        id_ = queuey.enqueue(self.conn, self.queue, "emails.SendEmail", {"To": "ada@example.com"},
                             priority=3, headers={"tenant": "acme"})
        props, body = self.get(self.queue)
        self.assertEqual((props.content_type, props.message_id, props.type, props.priority, props.delivery_mode),
                         (queuey.CONTENT_TYPE, id_, "emails.SendEmail", 3, 2))
        env = queuey.decode_body(body, content_type=props.content_type, message_id=props.message_id, kind=props.type)
        self.assertEqual((env.queue, env.attempt, env.max_attempts, env.priority, env.headers),
                         (self.queue, 1, 5, 3, {"tenant": "acme"}))
        self.assertEqual(msgpack.unpackb(env.payload), {"To": "ada@example.com"})
        self.assertAlmostEqual(env.enqueued_at_ns / 1e9, time.time(), delta=5)
        # A channel does as well as a connection.
        ch = self.conn.channel()
        id2 = queuey.enqueue(ch, self.queue, "emails.SendEmail", {"To": "b"})
        props, _ = self.get(self.queue)
        self.assertEqual(props.message_id, id2)

    def test_delay(self):
        start = time.monotonic()
        id_ = queuey.enqueue(self.conn, self.queue, "emails.SendEmail", {"To": "a"}, delay=datetime.timedelta(milliseconds=200), granularity_ms=100)
        hold = f"{self.queue}.deferred.200"
        self.created.append(hold)
        props, _ = self.get(self.queue)
        self.assertGreaterEqual(time.monotonic() - start, 0.2)
        self.assertEqual(props.message_id, id_)
        # The hold queue exists with the Go backend's arguments: a declare
        # with them is accepted.
        _, args, _ = queuey.hold_queue(self.queue, datetime.timedelta(milliseconds=200), granularity_ms=100)
        self.admin.queue_declare(hold, durable=True, arguments=args)

    def test_unroutable(self):
        with self.assertRaises(queuey.UnroutableError):
            queuey.enqueue(self.conn, self.queue + ".missing", "p.T", {})
        with self.assertRaises(queuey.UnroutableError):
            queuey.enqueue(self.conn, self.queue + ".missing", "p.T", {}, delay=datetime.timedelta(seconds=1))
        # The connection goes on.
        queuey.enqueue(self.conn, self.queue, "p.T", {})
        self.get(self.queue)

    def ladder_granularity(self):
        """A granularity no worker uses, whose ladder this test owns."""
        return 3_000_000 + int.from_bytes(os.urandom(3), "big") % 600_000

    def test_ladder_not_declared(self):
        g = self.ladder_granularity()
        with self.assertRaisesRegex(queuey.UnroutableError, f"exchange 'queuey.ladder.classic.{g}ms.00' does not exist: no worker has declared"):
            queuey.enqueue(self.conn, self.queue, "p.T", {}, delay=datetime.timedelta(milliseconds=g), delay_mode="ladder", granularity_ms=g)
        with self.assertRaisesRegex(queuey.UnroutableError, "does not exist .*would not run"):
            queuey.enqueue(self.conn, self.queue + ".missing", "p.T", {}, delay=datetime.timedelta(seconds=1), delay_mode="ladder")
        # The connection goes on, on a new channel.
        queuey.enqueue(self.conn, self.queue, "p.T", {})
        self.get(self.queue)

    def test_ladder_return(self):
        # A level exchange with no queue bound: the ladder was deleted
        # under its workers. The wait comes back, and is not stored.
        g = self.ladder_granularity()
        level = f"queuey.ladder.classic.{g}ms.00"
        self.admin.exchange_declare(level, "topic", auto_delete=True)
        try:
            with self.assertRaisesRegex(queuey.UnroutableError, f"returned unroutable by delay ladder exchange '{level}': its level queue is gone"):
                queuey.enqueue(self.conn, self.queue, "p.T", {}, job_id="ladder-return", delay=datetime.timedelta(milliseconds=g),
                               delay_mode="ladder", granularity_ms=g)
            # The channel goes on.
            queuey.enqueue(self.conn, self.queue, "p.T", {})
            props, _ = self.get(self.queue)
            self.assertNotEqual(props.message_id, "ladder-return")
        finally:
            self.admin.exchange_delete(level)

    def test_ladder_split(self):
        # A ladder is split when its level queue P.00.hi exists: the check
        # runs on a channel of its own, so the caller's channel goes on
        # after the broker says the queue is missing.
        g = self.ladder_granularity()
        prefix = f"queuey.ladder.quorum.{g}ms"
        ch = self.conn.channel()
        self.assertFalse(queuey.ladder_split(ch, granularity_ms=g))
        self.assertTrue(ch.is_open)
        queuey.enqueue(ch, self.queue, "p.T", {})
        self.get(self.queue)
        # No ladder was declared, so the answer was not kept: once the
        # workers declare a split ladder, the same channel sees it.
        self.created += [prefix + ".00.hi", prefix + ".unrouted"]
        self.admin.queue_declare(prefix + ".00.hi", durable=True)
        self.admin.queue_declare(prefix + ".unrouted", durable=True)
        self.assertTrue(queuey.ladder_split(ch, granularity_ms=g))
        self.assertTrue(queuey.ladder_split(self.conn, granularity_ms=g))
        # A classic ladder is never split, whatever queues exist.
        self.assertFalse(queuey.ladder_split(self.conn, queue_type="classic", granularity_ms=g))

    def test_ladder_not_split(self):
        # A declared ladder (its unrouted queue, declared after every level
        # queue, exists) without P.00.hi is not split, and the channel
        # keeps the answer.
        g = self.ladder_granularity()
        prefix = f"queuey.ladder.quorum.{g}ms"
        self.created += [prefix + ".unrouted", prefix + ".00.hi"]
        self.admin.queue_declare(prefix + ".unrouted", durable=True)
        ch = self.conn.channel()
        self.assertFalse(queuey.ladder_split(ch, granularity_ms=g))
        self.assertTrue(ch.is_open)
        self.admin.queue_declare(prefix + ".00.hi", durable=True)
        self.assertFalse(queuey.ladder_split(ch, granularity_ms=g))
        self.assertTrue(queuey.ladder_split(self.conn.channel(), granularity_ms=g))

    def test_hold_queue_mismatch(self):
        hold = f"{self.queue}.deferred.1000"
        self.created.append(hold)
        self.admin.queue_declare(hold, durable=True, arguments={"x-message-ttl": 5})
        with self.assertRaises(queuey.QueueyError) as cm:
            queuey.enqueue(self.conn, self.queue, "p.T", {}, delay=datetime.timedelta(seconds=1))
        self.assertNotIsInstance(cm.exception, queuey.UnroutableError)
        self.assertIn("PRECONDITION_FAILED", str(cm.exception))
        # The connection goes on, on a new channel.
        queuey.enqueue(self.conn, self.queue, "p.T", {})
        self.get(self.queue)


if __name__ == "__main__":
    unittest.main()
