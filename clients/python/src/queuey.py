"""Enqueue queuey jobs from Python, for Go workers to run.

The messages follow format 1 of queuey's wire format (docs/wire-format.md
in the queuey repository): publisher confirms, mandatory publishes, the
envelope's fields in a msgpack array followed by the msgpack payload, and
delays held where the Go backend holds them: its hold queues, its delay
ladder or the plugin's exchange, as the queue's delay mode says.

    import datetime, pika, queuey

    conn = pika.BlockingConnection(pika.URLParameters("amqp://guest:guest@127.0.0.1:5672/"))
    job_id = queuey.enqueue(conn, "emails.send_email", "emails.SendEmail",
                            {"To": "ada@example.com", "Subject": "Welcome"},
                            delay=datetime.timedelta(seconds=30))

The payload's keys are the Go struct's field names (or the names in its
msgpack tags): "To", not "to". A dataclass is sent as a map of its fields;
a field may name its key with metadata={"msgpack": "CustomerID"}.

A delay is a datetime.timedelta, Python's duration, as a Go
time.Duration is Go's: a bare number, which has no unit, is refused.

It needs pika (1.x) and msgpack (1.x): Debian's python3-pika and
python3-msgpack.
"""

from __future__ import annotations

import dataclasses
import datetime
import os
import struct
import threading
import time
import uuid
import weakref
from typing import Any, Mapping, Optional, Union

import msgpack
import pika
import pika.exceptions

__all__ = [
    "CONTENT_TYPE",
    "RESERVED_HEADER_PREFIX",
    "DEFAULT_MAX_ATTEMPTS",
    "DEFAULT_MAX_PRIORITY",
    "Envelope",
    "QueueyError",
    "UnroutableError",
    "NackedError",
    "InvalidJobError",
    "InvalidEnvelopeError",
    "enqueue",
    "encode_body",
    "decode_body",
    "encode_payload",
    "hold_queue",
    "quorum_rung",
    "ladder_levels",
    "ladder_split",
    "ladder_wait",
    "default_delay",
    "new_id",
]

#: The content type of every job message: format 1.
CONTENT_TYPE = "application/vnd.queuey.envelope+msgpack"
#: Job headers whose names start with this are queuey's own.
RESERVED_HEADER_PREFIX = "queuey-"
#: AMQP headers whose names start with this are queuey's own.
RESERVED_AMQP_HEADER_PREFIX = "x-queuey-"
#: The annotation's default max_attempts: what enqueue writes in the
#: body. Workers run a job by their queue's max_attempts, whatever the
#: body says.
DEFAULT_MAX_ATTEMPTS = 5
#: The annotation's default max_priority.
DEFAULT_MAX_PRIORITY = 10
#: The Go backend's default granularity, in milliseconds.
DEFAULT_GRANULARITY_MS = 1000
#: runtime.MaxDeferral in nanoseconds: (2^32-1) ms / 2.
MAX_DEFERRAL_NS = (2**32 - 1) * 1_000_000 // 2
#: The longest AMQP short string, in bytes.
MAX_SHORT_STRING = 255
#: How many envelope fields the body's array holds.
BODY_FIELDS = 7
#: How many times a delayed publish is tried when its hold queue is gone.
HOLD_TRIES = 3
#: The start of the names of the delay ladders' exchanges and queues.
LADDER_PREFIX = "queuey.ladder."
#: The least priority a split ladder (quorum, on RabbitMQ 4.x) holds apart:
#: a wait of this priority or more has its set bits written "h".
LADDER_HIGH_PRIORITY = 5

_MAX_INT32 = 2**31 - 1
_INT64 = (-(2**63), 2**63 - 1)


class QueueyError(Exception):
    """A job was not enqueued."""


class UnroutableError(QueueyError):
    """The broker returned the publish: no queue took it (the queue does
    not exist: no worker declared it yet)."""


class NackedError(QueueyError):
    """The broker nacked the publish: it did not store the job."""


class InvalidJobError(QueueyError, ValueError):
    """The job breaks the wire format's rules; nothing was published."""


class InvalidEnvelopeError(ValueError):
    """A body is not a format 1 envelope (decode_body)."""


@dataclasses.dataclass
class Envelope:
    """A job as it travels: the envelope's fields and the msgpack payload."""

    id: str
    queue: str
    kind: str
    payload: bytes
    attempt: int = 1
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    priority: int = 0
    enqueued_at_ns: int = 0
    last_error: str = ""
    headers: Optional[dict] = None


# --- the body ---------------------------------------------------------------


def _uint(n: int) -> bytes:
    if n <= 0x7F:
        return bytes([n])
    if n <= 0xFF:
        return bytes([0xCC, n])
    if n <= 0xFFFF:
        return b"\xcd" + struct.pack(">H", n)
    if n <= 0xFFFFFFFF:
        return b"\xce" + struct.pack(">I", n)
    return b"\xcf" + struct.pack(">Q", n)


def _int(n: int) -> bytes:
    if n >= 0:
        return _uint(n)
    return b"\xd3" + struct.pack(">q", n)


def _str(s: str) -> bytes:
    b = s.encode("utf-8")
    n = len(b)
    if n <= 31:
        head = bytes([0xA0 | n])
    elif n <= 0xFF:
        head = bytes([0xD9, n])
    elif n <= 0xFFFF:
        head = b"\xda" + struct.pack(">H", n)
    else:
        head = b"\xdb" + struct.pack(">I", n)
    return head + b


def _map_len(n: int) -> bytes:
    if n <= 15:
        return bytes([0x80 | n])
    if n <= 0xFFFF:
        return b"\xde" + struct.pack(">H", n)
    return b"\xdf" + struct.pack(">I", n)


def encode_body(env: Envelope) -> bytes:
    """The body of env, byte for byte as the Go codec writes it: the 7
    fields in the shortest encodings (int 64 for a negative enqueued_at),
    job headers sorted by name, then the payload."""
    _check_envelope(env)
    out = [bytes([0x90 | BODY_FIELDS])]
    out.append(_uint(env.attempt))
    out.append(_uint(env.max_attempts))
    out.append(_uint(env.priority))
    out.append(_int(env.enqueued_at_ns))
    out.append(_str(env.queue))
    out.append(_str(env.last_error or ""))
    if env.headers is None:
        out.append(b"\xc0")
    else:
        out.append(_map_len(len(env.headers)))
        for k in sorted(env.headers, key=lambda k: k.encode("utf-8")):
            out.append(_str(k))
            out.append(_str(env.headers[k]))
    out.append(bytes(env.payload))
    return b"".join(out)


def _check_envelope(env: Envelope) -> None:
    def short(name: str, v: Any, empty_ok: bool = False) -> None:
        if not isinstance(v, str):
            raise InvalidJobError(f"{name} must be a str, not {type(v).__name__}")
        n = len(v.encode("utf-8"))
        if n == 0 and not empty_ok:
            raise InvalidJobError(f"{name} must not be empty")
        if n > MAX_SHORT_STRING:
            raise InvalidJobError(f"{name} is {n} bytes, want at most {MAX_SHORT_STRING} (an AMQP short string)")

    def ranged(name: str, v: Any, lo: int, hi: int) -> None:
        if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
            raise InvalidJobError(f"{name} = {v!r}, want an int in {lo}..{hi}")

    short("job id", env.id)
    short("queue", env.queue)
    short("kind", env.kind, empty_ok=True)
    ranged("attempt", env.attempt, 1, _MAX_INT32)
    ranged("max_attempts", env.max_attempts, 1, _MAX_INT32)
    ranged("priority", env.priority, 0, 255)
    ranged("enqueued_at_ns", env.enqueued_at_ns, *_INT64)
    if not isinstance(env.last_error or "", str):
        raise InvalidJobError("last_error must be a str")
    if env.headers is not None:
        for k, v in env.headers.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise InvalidJobError(f"job header {k!r}: names and values must be str, not {type(k).__name__}: {type(v).__name__}")
    if not isinstance(env.payload, (bytes, bytearray, memoryview)) or len(env.payload) == 0:
        raise InvalidJobError("payload must be one msgpack value, as bytes")


def decode_body(body: bytes, *, content_type: Optional[str], message_id: Union[None, str, bytes], kind: Optional[str],
                expiration: Optional[str] = None) -> Envelope:
    """The envelope a message carries, checked as a Go worker's decoder
    checks it: content_type, message_id (str, or bytes as they came),
    kind and expiration are its properties, body its body. Raises
    InvalidEnvelopeError saying what is wrong. The payload is returned
    as it is: a worker checks it against the job's type."""
    if content_type != CONTENT_TYPE:
        raise InvalidEnvelopeError(f"content type {content_type or ''!r}, want {CONTENT_TYPE!r}")
    if not message_id:
        raise InvalidEnvelopeError("empty message id")
    if isinstance(message_id, (bytes, bytearray)):
        try:
            message_id = bytes(message_id).decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidEnvelopeError(f"message id {bytes(message_id)!r} is not UTF-8") from None
    if expiration:
        raise InvalidEnvelopeError(f"expiration {expiration!r} set: a job must not expire")
    unpacker = msgpack.Unpacker(raw=False, strict_map_key=False, max_buffer_size=max(len(body), 1))
    unpacker.feed(body)
    try:
        n = unpacker.read_array_header()
    except Exception as e:  # noqa: BLE001 - msgpack raises several types
        raise InvalidEnvelopeError(f"body does not start with the envelope's fields: {e}") from None
    if n < BODY_FIELDS:
        raise InvalidEnvelopeError(f"body does not start with the envelope's fields: {n} fields, want at least {BODY_FIELDS}")

    def value(name: str) -> Any:
        try:
            return unpacker.unpack()
        except Exception as e:  # noqa: BLE001
            raise InvalidEnvelopeError(f"{name}: {e}") from None

    def integer(name: str, lo: int, hi: int) -> int:
        v = value(name)
        if not isinstance(v, int) or isinstance(v, bool):
            raise InvalidEnvelopeError(f"{name}: {type(v).__name__}, want an integer")
        if not lo <= v <= hi:
            raise InvalidEnvelopeError(f"{name} = {v}, want {lo}..{hi}")
        return v

    def string(name: str, nil_ok: bool = False) -> str:
        v = value(name)
        if v is None and nil_ok:
            return ""
        if not isinstance(v, str):
            raise InvalidEnvelopeError(f"{name}: {type(v).__name__}, want a string")
        return v

    attempt = integer("attempt", 1, _MAX_INT32)
    max_attempts = integer("max attempts", 1, _MAX_INT32)
    priority = integer("priority", 0, 255)
    enqueued_at = integer("enqueued at", *_INT64)
    queue = string("queue")
    if queue == "":
        raise InvalidEnvelopeError("queue is empty")
    last_error = string("last error", nil_ok=True)
    try:
        nh = None if _peek(body, unpacker.tell()) == 0xC0 else unpacker.read_map_header()
    except Exception as e:  # noqa: BLE001
        raise InvalidEnvelopeError(f"headers: {e}") from None
    headers = None
    if nh is None:
        value("headers")
    else:
        headers = {}
        for _ in range(nh):
            k = string("header name")
            v = string(f"header {k!r}")
            if k in headers:
                raise InvalidEnvelopeError(f"header {k!r} appears twice: a name appears at most once")
            headers[k] = v
    for i in range(BODY_FIELDS, n):
        value(f"field {i + 1}")
    return Envelope(
        id=message_id,
        queue=queue,
        kind=kind or "",
        payload=bytes(body[unpacker.tell():]),
        attempt=attempt,
        max_attempts=max_attempts,
        priority=priority,
        enqueued_at_ns=enqueued_at,
        last_error=last_error,
        headers=headers,
    )


def _peek(body: bytes, off: int) -> int:
    if off >= len(body):
        raise InvalidEnvelopeError("body ends before the headers")
    return body[off]


# --- the payload ------------------------------------------------------------


def _plain(v: Any) -> Any:
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        out = {}
        for f in dataclasses.fields(v):
            out[f.metadata.get("msgpack", f.name)] = _plain(getattr(v, f.name))
        return out
    if isinstance(v, Mapping):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v


def encode_payload(payload: Any) -> bytes:
    """payload, a dict or a dataclass (nested ones too), as msgpack: str
    as str, bytes as bin, an aware datetime as the timestamp extension
    (a Go time.Time; a msgpack.Timestamp keeps nanoseconds)."""
    if not (isinstance(payload, Mapping) or (dataclasses.is_dataclass(payload) and not isinstance(payload, type))):
        raise InvalidJobError(f"payload must be a dict or a dataclass instance, not {type(payload).__name__}")
    try:
        return msgpack.packb(_plain(payload), use_bin_type=True, datetime=True)
    except (TypeError, ValueError, OverflowError) as e:
        raise InvalidJobError(f"payload does not encode as msgpack: {e}") from None


# --- ids and delays ---------------------------------------------------------


def new_id() -> str:
    """A new job ID: a UUIDv7, as Go's producer makes them."""
    ms = time.time_ns() // 1_000_000
    b = bytearray(ms.to_bytes(6, "big") + os.urandom(10))
    b[6] = 0x70 | (b[6] & 0x0F)
    b[8] = 0x80 | (b[8] & 0x3F)
    return str(uuid.UUID(bytes=bytes(b)))


def _delay_ns(delay: datetime.timedelta) -> int:
    """delay, a timedelta, in nanoseconds."""
    if not isinstance(delay, datetime.timedelta):
        raise InvalidJobError(
            f"delay = {delay!r}: want a datetime.timedelta, such as timedelta(seconds=30); "
            "a bare number has no unit")
    return (delay // datetime.timedelta(microseconds=1)) * 1000


def _granularity_ns(granularity_ms: int) -> int:
    """granularity_ms, checked, in nanoseconds."""
    if not isinstance(granularity_ms, int) or isinstance(granularity_ms, bool) or not 1 <= granularity_ms <= 3_600_000:
        raise InvalidJobError(f"granularity_ms = {granularity_ms!r}, want 1..3600000 (the workers' rabbitmq.Options.Granularity)")
    return granularity_ms * 1_000_000


def _round(delay_ns: int, granularity_ms: int) -> int:
    """delay_ns rounded up to the granularity, in milliseconds; at least
    one granularity, at most runtime.MaxDeferral."""
    g = _granularity_ns(granularity_ms)
    d = max(delay_ns, g)
    r = -(-d // g) * g
    if d > MAX_DEFERRAL_NS or r > MAX_DEFERRAL_NS:
        raise InvalidJobError(f"delay of {delay_ns / 1e9}s, rounded up to {r / 1e9}s, is over the longest wait, about 24.8 days (runtime.MaxDeferral)")
    return r // 1_000_000


def _ladder_up(u: int) -> int:
    if u <= 8:
        return u
    step = 1 << ((u - 1).bit_length() - 3)
    return -(-u // step) * step


def quorum_rung(ttl_ms: int, granularity_ms: int = DEFAULT_GRANULARITY_MS) -> int:
    """The wait, in ms, a quorum queue's hold queue holds a delay of ttl_ms
    (already rounded up to the granularity) for: the next rung of the
    ladder (docs/wire-format.md)."""
    u = ttl_ms // granularity_ms
    top = MAX_DEFERRAL_NS // (granularity_ms * 1_000_000)
    return min(_ladder_up(u), top) * granularity_ms


def hold_queue(queue: str, delay: datetime.timedelta, *, queue_type: str = "classic",
               granularity_ms: int = DEFAULT_GRANULARITY_MS) -> tuple:
    """The hold queue a delayed enqueue onto queue goes through: (name,
    arguments, ttl_ms), exactly as the Go backend declares it."""
    ttl = _round(_delay_ns(delay), granularity_ms)
    if queue_type == "quorum":
        ttl = quorum_rung(ttl, granularity_ms)
        args = {
            "x-queue-type": "quorum",
            "x-message-ttl": ttl,
            "x-dead-letter-exchange": "",
            "x-dead-letter-routing-key": queue,
            "x-dead-letter-strategy": "at-least-once",
            "x-overflow": "reject-publish",
        }
    elif queue_type == "classic":
        args = {
            "x-queue-type": "classic",
            "x-message-ttl": ttl,
            "x-dead-letter-exchange": "",
            "x-dead-letter-routing-key": queue,
            "x-expires": ttl + max(ttl, 1000),
        }
    else:
        raise InvalidJobError(f"queue_type = {queue_type!r}, want 'classic' or 'quorum'")
    return f"{queue}.deferred.{ttl}", args, ttl


def default_delay(queue_type: str) -> str:
    """The delay mode of a queue of queue_type whose annotation names none,
    on workers whose rabbitmq.Options.Delay names none, as Go's
    runtime.DefaultDelay says: "ladder" for a quorum queue, "queue" (hold
    queues) for a classic one. enqueue uses it when given no delay_mode."""
    return "ladder" if queue_type == "quorum" else "queue"


def ladder_levels(granularity_ms: int = DEFAULT_GRANULARITY_MS) -> int:
    """N, the number of levels of the delay ladder at granularity_ms: the
    bit length of the longest wait in granularities (22 at 1000 ms, 31 at
    1 ms). A ladder-mode queue's name is at most 255 - 2N bytes."""
    return (MAX_DEFERRAL_NS // _granularity_ns(granularity_ms)).bit_length()


def ladder_wait(queue: str, delay: datetime.timedelta, *, queue_type: str = "classic",
                granularity_ms: int = DEFAULT_GRANULARITY_MS, priority: int = 0, split: bool = False) -> tuple:
    """Where a delayed enqueue onto queue, a ladder-mode queue (delay=ladder),
    is published: (exchange, routing_key, wait_ms), exactly as the Go
    backend publishes its waits. The wait is delay rounded up to
    granularity_ms, at least one; the exchange is the ladder level of its
    highest set bit; the routing key is its N bits, most significant
    first, then queue. On a split ladder (split: a quorum ladder on
    RabbitMQ 4.x, as ladder_split says) the set bits of a job of priority
    LADDER_HIGH_PRIORITY or more are "h" instead of "1". Raises
    InvalidJobError for a negative delay, a wait over
    runtime.MaxDeferral, a name too long for the key, and a split classic
    ladder."""
    ns = _delay_ns(delay)
    if ns < 0:
        raise InvalidJobError(f"delay = {delay!r}, want 0 or more")
    if queue_type not in ("classic", "quorum"):
        raise InvalidJobError(f"queue_type = {queue_type!r}, want 'classic' or 'quorum'")
    if not isinstance(queue, str) or not queue:
        raise InvalidJobError(f"queue = {queue!r}, want the queue's name")
    if split and queue_type != "quorum":
        raise InvalidJobError(f"split = True for a {queue_type} ladder: only a quorum ladder on RabbitMQ 4.x is split")
    if not isinstance(priority, int) or isinstance(priority, bool) or not 0 <= priority <= 255:
        raise InvalidJobError(f"priority = {priority!r}, want 0..255")
    wait = _round(ns, granularity_ms)
    levels = ladder_levels(granularity_ms)
    n = len(queue.encode("utf-8"))
    if n > MAX_SHORT_STRING - 2 * levels:
        raise InvalidJobError(
            f"queue {queue!r} is {n} bytes: a ladder-mode queue's name is at most {MAX_SHORT_STRING - 2 * levels} bytes "
            f"at a granularity of {granularity_ms} ms (255 less 2 for each of the ladder's {levels} levels), "
            "so that a wait's routing key fits an AMQP short string")
    units = wait // granularity_ms
    one = "h" if split and priority >= LADDER_HIGH_PRIORITY else "1"
    bits = ".".join(one if units >> i & 1 else "0" for i in range(levels - 1, -1, -1))
    exchange = f"{LADDER_PREFIX}{queue_type}.{granularity_ms}ms.{units.bit_length() - 1:02d}"
    return exchange, f"{bits}.{queue}", wait


# --- publishing -------------------------------------------------------------


class _ChannelState:
    """What a channel has done already: confirm mode, checks, declares."""

    def __init__(self, channel):
        self.channel = channel
        self.checked = set()  # queues and exchanges known to exist
        self.quorum_holds = set()
        self.split = {}  # ladder prefix -> whether it is split, once it is declared


_states: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def _state(channel_or_connection) -> _ChannelState:
    with _lock:
        st = _states.get(channel_or_connection)
        if st is not None and st.channel.is_open:
            return st
        if isinstance(channel_or_connection, pika.BlockingConnection):
            ch = channel_or_connection.channel()
        elif isinstance(channel_or_connection, pika.adapters.blocking_connection.BlockingChannel):
            ch = channel_or_connection
        else:
            raise TypeError(f"want a pika BlockingConnection or BlockingChannel, not {type(channel_or_connection).__name__}")
        if not getattr(ch, "_delivery_confirmation", False):
            ch.confirm_delivery()
        st = _ChannelState(ch)
        _states[channel_or_connection] = st
        return st


def _publish(st: _ChannelState, exchange: str, key: str, body: bytes, props, mandatory: bool) -> None:
    try:
        st.channel.basic_publish(exchange, key, body, props, mandatory=mandatory)
    except pika.exceptions.UnroutableError:
        raise UnroutableError(f"publish to {key!r} returned unroutable: no queue {key!r} (has a worker declared it?)") from None
    except pika.exceptions.NackError:
        raise NackedError(f"publish to {key!r} was nacked by the broker: the job was not stored") from None


def enqueue(channel_or_connection, queue: str, kind: str, payload: Any, *,
            priority: Optional[int] = None,
            job_id: Optional[str] = None,
            headers: Optional[Mapping[str, str]] = None,
            delay: Optional[datetime.timedelta] = None,
            max_priority: int = DEFAULT_MAX_PRIORITY,
            queue_type: str = "classic",
            delay_mode: Optional[str] = None,
            delay_exchange: Optional[str] = None,
            granularity_ms: int = DEFAULT_GRANULARITY_MS) -> str:
    """Enqueue one job of kind (the Go type, "emails.SendEmail") onto queue
    and return its ID once the broker has confirmed it.

    payload is a dict or a dataclass whose keys are the Go struct's field
    names. priority is 0..max_priority; job_id a unique ID (a UUIDv7 when
    None); headers string job headers (none starting with "queuey-");
    delay, a datetime.timedelta, holds the job that long first (rounded up
    to granularity_ms, the workers' granularity). max_priority (0 for a
    queue declared without priorities), queue_type ("classic" or
    "quorum"), delay_mode ("queue", "ladder" or "plugin") and
    delay_exchange must be the queue's, as its //queuey:queue annotation
    and the workers' rabbitmq.Options say; delay_mode None is the default
    of queue_type, default_delay(queue_type): "ladder" for quorum, "queue"
    for classic. The workers run the job by their queue's max_attempts.

    Raises UnroutableError when the queue (or a hold queue, the delay
    ladder or the plugin's exchange) does not exist, NackedError when the
    broker refuses the job, InvalidJobError (nothing published) for a job
    that breaks the rules, and QueueyError when the broker closes the
    channel (the channel is then dropped, and the next enqueue opens
    another on a connection).
    """
    if priority is None:
        priority = 0
    if not isinstance(max_priority, int) or isinstance(max_priority, bool) or not 0 <= max_priority <= 255:
        raise InvalidJobError(f"max_priority = {max_priority!r}, want the queue's max_priority, 0..255 (0: no priorities)")
    if not isinstance(priority, int) or isinstance(priority, bool) or not 0 <= priority <= max_priority:
        if max_priority == 0:
            raise InvalidJobError(f"queue {queue!r}: priority {priority!r}, want 0: the queue declares no priority (max_priority=0)")
        raise InvalidJobError(f"queue {queue!r}: priority {priority!r}, want 0..{max_priority} (the queue's max_priority)")
    if not isinstance(kind, str) or not kind:
        raise InvalidJobError(f"kind = {kind!r}: want the job's Go type, package.Type, as its generated XQueue.Kind says")
    if headers is not None:
        headers = dict(headers)
        for name in sorted(headers):
            if isinstance(name, str) and name.startswith(RESERVED_HEADER_PREFIX):
                raise InvalidJobError(f"queue {queue!r}: header {name!r} is reserved: queuey sets the headers whose names start with {RESERVED_HEADER_PREFIX!r} itself; rename it")
    now = time.time_ns()
    env = Envelope(
        id=new_id() if job_id is None else job_id,
        queue=queue,
        kind=kind,
        payload=encode_payload(payload),
        attempt=1,
        max_attempts=DEFAULT_MAX_ATTEMPTS,
        priority=priority,
        enqueued_at_ns=now,
        headers=headers,
    )
    body = encode_body(env)
    props = pika.BasicProperties(
        content_type=CONTENT_TYPE,
        message_id=env.id,
        type=kind or None,
        timestamp=now // 1_000_000_000,
        delivery_mode=2,
        priority=priority or None,
    )
    if delay is not None and _delay_ns(delay) < 0:
        raise InvalidJobError(f"delay = {delay!r}, want 0 or more")
    delayed = delay is not None and _delay_ns(delay) > 0
    if delay_mode is None:
        delay_mode = default_delay(queue_type)
    if delayed and delay_mode not in ("queue", "ladder", "plugin"):
        raise InvalidJobError(f"delay_mode = {delay_mode!r}, want 'queue', 'ladder' or 'plugin'")
    if delayed and delay_mode == "queue":
        hold, args, _ = hold_queue(queue, delay, queue_type=queue_type, granularity_ms=granularity_ms)
    elif delayed and delay_mode == "ladder":
        # Checks the arguments before anything is published; the key is
        # made again once the channel says whether the ladder is split.
        level, key, _ = ladder_wait(queue, delay, queue_type=queue_type, granularity_ms=granularity_ms)
    elif delayed:
        ms = _round(_delay_ns(delay), granularity_ms)
        if ms > _MAX_INT32:
            raise InvalidJobError(f"delay of {ms} ms is over the plugin's x-delay limit ({_MAX_INT32} ms)")
        props.headers = {"x-delay": ms}

    st = _state(channel_or_connection)
    try:
        if not delayed:
            _publish(st, "", queue, body, props, True)
        elif delay_mode == "plugin":
            exchange = delay_exchange or queue + ".delay"
            if ("exchange", exchange) not in st.checked:
                _passive(st, lambda: st.channel.exchange_declare(exchange, passive=True),
                         UnroutableError(f"delay exchange {exchange!r} of queue {queue!r} does not exist: has a worker declared the queue with delay=plugin, with the delayed-message plugin enabled?"))
                st.checked.add(("exchange", exchange))
            _publish(st, exchange, queue, body, props, False)
        elif delay_mode == "ladder":
            if queue_type == "quorum" and priority >= LADDER_HIGH_PRIORITY and _ladder_split(st, queue_type, granularity_ms):
                level, key, _ = ladder_wait(queue, delay, queue_type=queue_type, granularity_ms=granularity_ms,
                                            priority=priority, split=True)
            _ladder_publish(st, queue, queue_type, granularity_ms, level, key, body, props)
        else:
            _hold_publish(st, queue, queue_type, hold, args, body, props)
    except UnroutableError as e:
        if getattr(e, "channel_closed", False):
            _forget(channel_or_connection)
        raise
    except pika.exceptions.ChannelClosedByBroker as e:
        _forget(channel_or_connection)
        raise QueueyError(f"enqueue onto {queue!r}: the broker closed the channel: {e.reply_code} {e.reply_text}") from None
    except (pika.exceptions.AMQPConnectionError, pika.exceptions.ChannelWrongStateError, pika.exceptions.StreamLostError) as e:
        _forget(channel_or_connection)
        raise QueueyError(f"enqueue onto {queue!r}: not confirmed ({e!r}): it may or may not be stored; enqueue it again with job_id={env.id!r}") from None
    return env.id


def _check_queue(st: _ChannelState, queue: str, when_due: str) -> None:
    """Checks once per channel that queue exists, before a delayed publish
    onto it: when_due says what would become of a wait onto a missing
    queue."""
    if ("queue", queue) not in st.checked:
        _passive(st, lambda: st.channel.queue_declare(queue, passive=True),
                 UnroutableError(f"queue {queue!r} does not exist (has a worker declared it?): a delayed job {when_due}"))
        st.checked.add(("queue", queue))


def _ladder_publish(st: _ChannelState, queue: str, queue_type: str, granularity_ms: int, level: str, key: str,
                    body: bytes, props) -> None:
    # A due wait whose queue is missing goes to the ladder's unrouted
    # queue, where nothing runs it.
    _check_queue(st, queue, "would not run: it would go to the delay ladder's unrouted queue when due")
    if ("exchange", level) not in st.checked:
        # A publish to a missing exchange would close the channel, and
        # say less.
        _passive(st, lambda: st.channel.exchange_declare(level, passive=True),
                 UnroutableError(f"delay ladder exchange {level!r} does not exist: no worker has declared the {queue_type} "
                                 f"delay ladder at a granularity of {granularity_ms} ms (is a worker of {queue!r} running, "
                                 "with delay=ladder and this granularity?)"))
        st.checked.add(("exchange", level))
    try:
        _publish(st, level, key, body, props, True)
    except UnroutableError:
        # The level's queue is gone: the ladder was deleted under its
        # workers. Declaring it is theirs to do (its arguments depend on
        # the broker, and they bind their queues to it).
        st.checked.discard(("exchange", level))
        raise UnroutableError(
            f"wait onto {queue!r} returned unroutable by delay ladder exchange {level!r}: its level queue is gone, the "
            f"ladder was deleted; the job was not stored: enqueue it again with job_id={props.message_id!r} once a worker "
            "has declared the ladder again") from None


def ladder_split(channel_or_connection, *, queue_type: str = "quorum",
                 granularity_ms: int = DEFAULT_GRANULARITY_MS) -> bool:
    """Whether the delay ladder of queue_type and granularity_ms on the
    broker is split: whether its workers declared the level queues of high
    priority, as they do for a quorum ladder on RabbitMQ 4.x. The check is
    a passive declare of the ladder's queue P.unrouted, which its workers
    declare after every level queue, then of P.00.hi, on a channel of its
    own, which the broker closes when a queue is missing. enqueue makes it
    for a job of priority LADDER_HIGH_PRIORITY or more onto a quorum
    ladder, and keeps the answer for the channel's life once the ladder is
    declared (P.unrouted exists, or P.00.hi does); before that it checks
    again at the next such job."""
    return _ladder_split(_state(channel_or_connection), queue_type, granularity_ms)


def _ladder_split(st: _ChannelState, queue_type: str, granularity_ms: int) -> bool:
    if queue_type != "quorum":
        return False
    prefix = f"{LADDER_PREFIX}{queue_type}.{granularity_ms}ms"
    if prefix in st.split:
        return st.split[prefix]
    # A passive declare of a missing queue closes its channel: they run on
    # channels of their own, never on the caller's.
    conn = st.channel.connection
    ch = conn.channel()
    try:
        # The workers declare P.unrouted after every level queue: once it
        # exists, so does P.00.hi on a split ladder, and a missing P.00.hi
        # says that the ladder is not split. Before, a missing P.00.hi
        # says only that the ladder is not declared (yet).
        declared = _queue_exists(ch, prefix + ".unrouted")
        if not ch.is_open:
            ch = conn.channel()
        split = _queue_exists(ch, prefix + ".00.hi")
    finally:
        if ch.is_open:
            ch.close()
    if split or declared:
        st.split[prefix] = split
    return split


def _queue_exists(ch, queue: str) -> bool:
    """Whether queue exists, by a passive declare on ch, which the broker
    closes when it does not."""
    try:
        ch.queue_declare(queue, passive=True)
        return True
    except pika.exceptions.ChannelClosedByBroker as e:
        if e.reply_code != 404:
            raise
        return False


def _hold_publish(st: _ChannelState, queue: str, queue_type: str, hold: str, args: dict, body: bytes, props) -> None:
    ch = st.channel
    # The broker drops a hold queue's expired message silently when the
    # queue it dead-letters to is missing.
    _check_queue(st, queue, "would be dropped when due")
    err = None
    for _ in range(HOLD_TRIES):
        if queue_type != "quorum" or hold not in st.quorum_holds:
            # A classic hold queue's declare renews its lease: it comes
            # right before every publish.
            ch.queue_declare(hold, durable=True, arguments=args)
            if queue_type == "quorum":
                st.quorum_holds.add(hold)
        try:
            _publish(st, "", hold, body, props, True)
            return
        except UnroutableError as e:  # the hold queue expired meanwhile
            st.quorum_holds.discard(hold)
            err = e
    raise err


def _passive(st: _ChannelState, declare, missing: QueueyError) -> None:
    """Runs a passive declare; a 404 (which closes the channel) raises
    missing."""
    try:
        declare()
    except pika.exceptions.ChannelClosedByBroker as e:
        if e.reply_code != 404:
            raise
        missing.channel_closed = True
        raise missing from None


def _forget(channel_or_connection) -> None:
    with _lock:
        _states.pop(channel_or_connection, None)
