'use strict';
// Tests of the queuey-client package, as a project that installed it
// requires it: the wire format's test vectors (no broker needed), and
// enqueues against the broker at QUEUEY_AMQP_URL (skipped when none
// answers, unless CI or QUEUEY_REQUIRE_BROKER is set). The vectors are read
// from QUEUEY_WIRE_VECTORS, by default the repository's testdata/wire.
//
//   cd clients/node && npm test     (the package requires itself by name)

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const crypto = require('node:crypto');
const { decode: msgpackDecode } = require('@msgpack/msgpack');
const amqp = require('amqplib');
const queuey = require('queuey-client');

const WIRE = process.env.QUEUEY_WIRE_VECTORS || path.join(__dirname, '..', '..', '..', 'testdata', 'wire');

function load(dir) {
  const files = fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort();
  assert.ok(files.length > 0, `no test vectors in ${dir}`);
  return files.map((f) => JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')));
}

// fromJSON is a vector's payload, as decode (with bigints and timestamps
// left as the decoder gives them) should give it.
function fromJSON(v) {
  if (Array.isArray(v)) return v.map(fromJSON);
  if (v && typeof v === 'object') {
    const keys = Object.keys(v);
    if (keys.length === 1 && keys[0] === '$bytes') return new Uint8Array(Buffer.from(v.$bytes, 'base64'));
    if (keys.length === 1 && keys[0] === '$int') return BigInt(v.$int);
    if (keys.length === 1 && keys[0] === '$time') return v.$time;
    return Object.fromEntries(keys.map((k) => [k, fromJSON(v[k])]));
  }
  return typeof v === 'number' && Number.isInteger(v) ? BigInt(v) : v;
}

// normalize is a decoded payload with integers as bigints and timestamps
// as the vectors write them.
const TIMESTAMP = -1;
function normalize(v) {
  if (Array.isArray(v)) return v.map(normalize);
  if (v instanceof Uint8Array) return new Uint8Array(v);
  if (v && typeof v === 'object' && v.type === TIMESTAMP && v.data) return timestampString(v.data);
  if (v && typeof v === 'object') return Object.fromEntries(Object.keys(v).map((k) => [k, normalize(v[k])]));
  return typeof v === 'number' && Number.isInteger(v) ? BigInt(v) : v;
}

function timestampString(data) {
  const b = Buffer.from(data);
  let sec;
  let nsec;
  if (b.length === 4) [sec, nsec] = [BigInt(b.readUInt32BE(0)), 0];
  else if (b.length === 8) {
    const x = b.readBigUInt64BE(0);
    [sec, nsec] = [x & 0x3ffffffffn, Number(x >> 34n)];
  } else [sec, nsec] = [b.readBigInt64BE(4), b.readUInt32BE(0)];
  const iso = new Date(Number(sec) * 1000).toISOString().slice(0, 19);
  return nsec ? `${iso}.${String(nsec).padStart(9, '0').replace(/0+$/, '')}Z` : `${iso}Z`;
}

function decodePayload(bytes) {
  // Timestamps as raw extension data, integers as bigints where they need it.
  const { ExtensionCodec } = require('@msgpack/msgpack');
  const codec = new ExtensionCodec();
  codec.register({ type: TIMESTAMP, encode: () => null, decode: (data) => ({ type: TIMESTAMP, data }) });
  return msgpackDecode(bytes, { extensionCodec: codec, useBigInt64: true });
}

function envelopeOf(vec) {
  const e = vec.envelope;
  return {
    id: e.id,
    kind: e.kind,
    queue: e.queue,
    attempt: e.attempt,
    maxAttempts: e.max_attempts,
    priority: e.priority,
    enqueuedAtNs: BigInt(e.enqueued_at_ns),
    lastError: e.last_error,
    headers: e.headers,
    payload: Buffer.from(vec.payload_hex, 'hex'),
  };
}

test('vectors: decode, then encode to the same bytes', () => {
  for (const vec of load(WIRE)) {
    const p = vec.properties;
    const body = Buffer.from(vec.body_hex, 'hex');
    const got = queuey.decodeBody(body, { contentType: p.content_type, messageId: p.message_id, type: p.type });
    const want = envelopeOf(vec);
    assert.deepEqual({ ...got, payload: Buffer.from(got.payload) }, want, vec.name);
    assert.equal(p.content_type, queuey.CONTENT_TYPE);
    assert.equal(p.delivery_mode, 2);
    if (!vec.decode_only) {
      assert.equal(queuey.encodeBody(want).toString('hex'), vec.body_hex, vec.name);
      const ts = Number(BigInt(vec.envelope.enqueued_at_ns) / 1000000000n);
      assert.equal(p.timestamp, ts || undefined, vec.name);
    }
    assert.deepEqual(normalize(decodePayload(want.payload)), fromJSON(vec.payload), vec.name);
  }
});

test('vectors: delays', () => {
  for (const vec of load(WIRE)) {
    const d = vec.delay;
    if (!d) continue;
    const queue = vec.envelope.queue;
    if (d.mode === 'plugin') {
      assert.deepEqual(vec.headers, { 'x-delay': queuey.roundDelay(d.delay_ms, d.granularity_ms) }, vec.name);
      assert.deepEqual(vec.publish, { exchange: `${queue}.delay`, routing_key: queue, mandatory: false });
      continue;
    }
    const h = queuey.holdQueue(queue, d.delay_ms, { queueType: d.queue_type, granularityMs: d.granularity_ms });
    assert.deepEqual({ name: h.name, arguments: h.arguments }, vec.hold_queue, vec.name);
    assert.deepEqual(vec.publish, { exchange: '', routing_key: h.name, mandatory: true }, vec.name);
  }
});

test('vectors: the delay ladder', async () => {
  // Where a delayed enqueue onto a ladder-mode queue goes, or why it is
  // refused, as the Go backend's topology.Ladder says.
  const reasons = { delay_too_long: /over the longest wait/, name_too_long: /a ladder-mode queue's name is at most/ };
  for (const vec of load(path.join(WIRE, 'ladder'))) {
    const opts = { queueType: vec.queue_type, granularityMs: vec.granularity_ms };
    assert.equal(queuey.ladderLevels(vec.granularity_ms), vec.levels, vec.name);
    // A ladder is split when quorum on a 4.x broker.
    assert.equal(vec.split, vec.queue_type === 'quorum' && Number(vec.broker.split('.')[0]) >= 4, vec.name);
    if (vec.refused) {
      assert.throws(() => queuey.ladderWait(vec.queue, vec.delay_ms, opts), reasons[vec.refused], vec.name);
      // enqueue refuses it before it publishes: it has nothing to publish on.
      await assert.rejects(queuey.enqueue(null, vec.queue, 'p.T', {}, { ...opts, delayMs: vec.delay_ms, delayMode: 'ladder' }), reasons[vec.refused], vec.name);
      continue;
    }
    const w = queuey.ladderWait(vec.queue, vec.delay_ms, { ...opts, priority: vec.priority, split: vec.split });
    assert.deepEqual({ exchange: w.exchange, routing_key: w.routingKey, mandatory: true }, vec.publish, vec.name);
    assert.equal(w.waitMs, vec.wait_ms, vec.name);
    assert.equal(w.levels, vec.levels, vec.name);
    assert.ok(Buffer.byteLength(w.routingKey) <= 255, vec.name);
  }
});

test('the delay ladder refuses bad input', async () => {
  assert.throws(() => queuey.ladderWait('q', -1000), /delayMs = -1000, want 0 or more/);
  await assert.rejects(queuey.enqueue(null, 'q', 'p.T', {}, { delayMs: -1000, delayMode: 'ladder' }), /want 0 or more/);
  assert.throws(() => queuey.ladderWait('q', 1000, { queueType: 'stream' }), /queueType = "stream"/);
  assert.throws(() => queuey.ladderWait('q', 1000, { granularityMs: 0 }), /granularityMs = 0/);
  await assert.rejects(queuey.enqueue(null, 'q', 'p.T', {}, { delayMs: 1000, delayMode: 'ladders' }), /want "queue", "ladder" or "plugin"/);
  await assert.rejects(queuey.enqueue(null, 'q', 'p.T', {}, { delayMs: 25 * 86400000, delayMode: 'ladder' }), /over the longest wait/);
  // A name's length is in bytes: 106 two-byte letters are 212.
  assert.throws(() => queuey.ladderWait('é'.repeat(106), 1000), /is 212 bytes/);
  // Zero waits one granularity, as a worker's wait of zero does; an
  // enqueue with no delay is not a wait at all.
  assert.deepEqual(queuey.ladderWait('q', 0), { exchange: 'queuey.ladder.classic.1000ms.00', routingKey: `${'0.'.repeat(21)}1.q`, waitMs: 1000, levels: 22 });
  // Only a quorum ladder is split; a priority is a byte.
  assert.throws(() => queuey.ladderWait('q', 1000, { split: true }), /only a quorum ladder on RabbitMQ 4.x is split/);
  assert.throws(() => queuey.ladderWait('q', 1000, { queueType: 'quorum', priority: 256, split: true }), /priority = 256/);
  // A fraction of a millisecond rounds up too.
  assert.equal(queuey.ladderWait('q', 100.5, { granularityMs: 1 }).waitMs, 101);
});

test('the delay mode a queue names none of is its type\'s, as Go\'s runtime.DefaultDelay', async () => {
  assert.equal(queuey.defaultDelay('quorum'), 'ladder');
  assert.equal(queuey.defaultDelay('classic'), 'queue');
  // Given no delayMode, a delayed enqueue onto a quorum queue is a ladder
  // wait: a name of 212 bytes is too long for its routing key (211 at
  // 1000 ms), and refused before anything is published.
  const name = 'q'.repeat(212);
  await assert.rejects(queuey.enqueue(null, name, 'p.T', {}, { delayMs: 1000, queueType: 'quorum' }), /is 212 bytes: a ladder-mode queue's name/);
  // A hold queue takes the name, and so does a classic queue by default or
  // a quorum one told delayMode "queue": the enqueue gets as far as the
  // channel it was not given.
  for (const opts of [{}, { queueType: 'classic' }, { queueType: 'quorum', delayMode: 'queue' }]) {
    await assert.rejects(queuey.enqueue({}, name, 'p.T', {}, { delayMs: 1000, ...opts }), /want an amqplib connection or ConfirmChannel/, JSON.stringify(opts));
  }
});

test('vectors: invalid messages are refused', () => {
  for (const vec of load(path.join(WIRE, 'invalid'))) {
    const p = vec.properties;
    const messageId = p.message_id_hex ? Buffer.from(p.message_id_hex, 'hex') : p.message_id;
    assert.throws(
      () => queuey.decodeBody(Buffer.from(vec.body_hex, 'hex'), { contentType: p.content_type, messageId, type: p.type, expiration: p.expiration }),
      queuey.InvalidEnvelopeError,
      vec.name,
    );
  }
});

test('the quorum ladder and the limits of a delay', () => {
  const rungs = new Set();
  for (let u = 1; u < 42; u++) rungs.add(queuey.quorumRung(u * 1000) / 1000);
  assert.deepEqual([...rungs], [1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 24, 28, 32, 40, 48]);
  assert.equal(queuey.quorumRung(3600 * 1000), 4096 * 1000);
  const longest = Math.floor((2 ** 32 - 1) / 2 / 1000) * 1000;
  assert.equal(queuey.roundDelay(longest), longest);
  assert.throws(() => queuey.roundDelay(longest + 1), queuey.InvalidJobError);
  assert.equal(queuey.roundDelay(0.000001), 1000);
  assert.equal(queuey.roundDelay(1500), 2000);
  assert.equal(queuey.roundDelay(100.5, 1), 101);
});

test('job IDs are UUIDv7', () => {
  const a = queuey.newId();
  assert.match(a, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.notEqual(a, queuey.newId());
  assert.ok(Math.abs(Number.parseInt(a.replace(/-/g, '').slice(0, 12), 16) - Date.now()) < 5000);
});

test('jobs that break the rules are refused before anything is published', async () => {
  const env = { id: 'x', queue: 'q', kind: 'p.T', payload: Buffer.from([0x80]) };
  for (const change of [
    { id: '' },
    { id: 'i'.repeat(256) },
    { queue: '' },
    { kind: 'k'.repeat(256) },
    { attempt: 0 },
    { maxAttempts: 2 ** 31 },
    { priority: 256 },
    { priority: -1 },
    { headers: { a: 1 } },
    { payload: Buffer.alloc(0) },
  ]) {
    assert.throws(() => queuey.encodeBody({ ...env, ...change }), queuey.InvalidJobError, JSON.stringify(change));
  }
  await assert.rejects(queuey.enqueue(null, 'q', 'p.T', {}, { headers: { 'queuey-tick': 'x' } }), queuey.InvalidJobError);
  await assert.rejects(queuey.enqueue(null, 'q', 'p.T', [1, 2]), queuey.InvalidJobError);
  await assert.rejects(queuey.enqueue(null, 'q', '', {}), queuey.InvalidJobError);
});

test('a delay is delayMs, in milliseconds; an option enqueue does not know is refused', async () => {
  await assert.rejects(queuey.enqueue(null, 'q', 'p.T', {}, { delay: 30 }), /unknown option "delay": give delayMs/);
  await assert.rejects(queuey.enqueue(null, 'q', 'p.T', {}, { maxAttempts: 3 }), /unknown option "maxAttempts"/);
  await assert.rejects(queuey.enqueue(null, 'q', 'p.T', {}, { priorty: 3 }), /unknown option "priorty"/);
  await assert.rejects(queuey.enqueue(null, 'q', 'p.T', {}, { delayMs: '30s' }), /delayMs = 30s, want 0 or more milliseconds/);
});

test('a priority above the queue\'s max_priority is refused, as Go\'s producer refuses it', async () => {
  await assert.rejects(queuey.enqueue(null, 'q', 'p.T', {}, { priority: 9, maxPriority: 3 }), /priority 9, want 0\.\.3 \(the queue's max_priority\)/);
  await assert.rejects(queuey.enqueue(null, 'q', 'p.T', {}, { priority: 11 }), /priority 11, want 0\.\.10/);
  await assert.rejects(queuey.enqueue(null, 'q', 'p.T', {}, { priority: 1, maxPriority: 0 }), /declares no priority/);
});

test('the package under test is the installed one', () => {
  const file = require.resolve('queuey-client');
  const installed = file.includes(`${path.sep}node_modules${path.sep}queuey-client${path.sep}`);
  if (process.env.QUEUEY_REQUIRE_INSTALLED) assert.ok(installed, `queuey-client resolves to ${file}, not to an installed package`);
});

// --- against the broker ---

const URL = process.env.QUEUEY_AMQP_URL || 'amqp://guest:guest@127.0.0.1:5672/';

function brokerAnswers() {
  const u = new globalThis.URL(URL);
  return new Promise((resolve) => {
    const s = net.connect({ host: u.hostname || '127.0.0.1', port: Number(u.port) || 5672 });
    s.setTimeout(2000);
    s.on('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
    s.on('timeout', () => {
      s.destroy();
      resolve(false);
    });
  });
}

async function withBroker(t, f) {
  if (!(await brokerAnswers())) {
    if (process.env.CI || process.env.QUEUEY_REQUIRE_BROKER) assert.fail(`no broker answers at ${URL}`);
    t.skip(`no broker answers at ${URL} (is rabbitmq-server running?)`);
    return;
  }
  const conn = await amqp.connect(URL);
  const admin = await conn.createChannel();
  const queue = `nodeclient.${crypto.randomBytes(6).toString('hex')}`;
  const created = [queue];
  await admin.assertQueue(queue, { durable: true, arguments: { 'x-max-priority': 10 } });
  const get = async (q, timeout = 10000) => {
    const deadline = Date.now() + timeout;
    while (Date.now() < deadline) {
      const m = await admin.get(q, { noAck: true });
      if (m) return m;
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.fail(`nothing arrived on ${q} within ${timeout}ms`);
  };
  try {
    await f({ conn, admin, queue, created, get });
  } finally {
    const ch = await conn.createChannel();
    for (const q of created) await ch.deleteQueue(q);
    await conn.close();
  }
}

test('enqueue against the broker', async (t) => {
  await withBroker(t, async ({ conn, queue, get }) => {
    const id = await queuey.enqueue(conn, queue, 'emails.SendEmail', { To: 'ada@example.com' }, { priority: 3, headers: { tenant: 'acme' } });
    const m = await get(queue);
    const p = m.properties;
    assert.deepEqual([p.contentType, p.messageId, p.type, p.priority, p.deliveryMode], [queuey.CONTENT_TYPE, id, 'emails.SendEmail', 3, 2]);
    const env = queuey.decodeBody(m.content, p);
    assert.deepEqual([env.queue, env.attempt, env.maxAttempts, env.priority, env.headers], [queue, 1, 5, 3, { tenant: 'acme' }]);
    assert.deepEqual(msgpackDecode(env.payload), { To: 'ada@example.com' });
    assert.ok(Math.abs(Number(env.enqueuedAtNs / 1000000n) - Date.now()) < 5000);
  });
});

test('a delayed enqueue waits in the hold queue the Go backend uses', async (t) => {
  await withBroker(t, async ({ conn, admin, queue, created, get }) => {
    const start = Date.now();
    const id = await queuey.enqueue(conn, queue, 'emails.SendEmail', { To: 'a' }, { delayMs: 200, granularityMs: 100 });
    const hold = queuey.holdQueue(queue, 200, { granularityMs: 100 });
    created.push(hold.name);
    const m = await get(queue);
    assert.ok(Date.now() - start >= 200);
    assert.equal(m.properties.messageId, id);
    // A declare with the Go backend's arguments is accepted.
    await admin.assertQueue(hold.name, { durable: true, arguments: hold.arguments });
  });
});

test('many enqueues in flight at once, and an unroutable one among them', async (t) => {
  await withBroker(t, async ({ conn, queue, get }) => {
    const ids = await Promise.all(Array.from({ length: 200 }, (_, i) => queuey.enqueue(conn, queue, 'p.T', { N: i })));
    assert.equal(new Set(ids).size, 200);
    const results = await Promise.allSettled([
      queuey.enqueue(conn, queue, 'p.T', {}),
      queuey.enqueue(conn, `${queue}.missing`, 'p.T', {}),
      queuey.enqueue(conn, queue, 'p.T', {}),
    ]);
    assert.deepEqual(
      results.map((r) => r.status),
      ['fulfilled', 'rejected', 'fulfilled'],
    );
    assert.ok(results[1].reason instanceof queuey.UnroutableError, String(results[1].reason));
    for (let i = 0; i < 202; i++) await get(queue);
    await assert.rejects(queuey.enqueue(conn, `${queue}.missing`, 'p.T', {}, { delayMs: 1000 }), queuey.UnroutableError);
    // The connection goes on, on a new channel.
    await queuey.enqueue(conn, queue, 'p.T', {});
    await get(queue);
  });
});

// ladderGranularity is a granularity no worker uses, whose ladder a test owns.
function ladderGranularity() {
  return 3000000 + crypto.randomInt(600000);
}

test('a wait onto a delay ladder no worker declared is refused', async (t) => {
  await withBroker(t, async ({ conn, queue, get }) => {
    const g = ladderGranularity();
    await assert.rejects(
      queuey.enqueue(conn, queue, 'p.T', {}, { delayMs: g, delayMode: 'ladder', granularityMs: g }),
      (e) => e instanceof queuey.UnroutableError && e.message.includes(`exchange "queuey.ladder.classic.${g}ms.00" does not exist: no worker has declared`),
    );
    await assert.rejects(
      queuey.enqueue(conn, `${queue}.missing`, 'p.T', {}, { delayMs: 1000, delayMode: 'ladder' }),
      (e) => e instanceof queuey.UnroutableError && /does not exist .*would not run/.test(e.message),
    );
    // The connection goes on, on a new channel.
    await queuey.enqueue(conn, queue, 'p.T', {});
    await get(queue);
  });
});

test('a wait the ladder returns is not stored', async (t) => {
  await withBroker(t, async ({ conn, admin, queue, get }) => {
    // A level exchange with no queue bound: the ladder was deleted under
    // its workers.
    const g = ladderGranularity();
    const level = `queuey.ladder.classic.${g}ms.00`;
    await admin.assertExchange(level, 'topic', { durable: false, autoDelete: true });
    try {
      await assert.rejects(
        queuey.enqueue(conn, queue, 'p.T', {}, { jobId: 'ladder-return', delayMs: g, delayMode: 'ladder', granularityMs: g }),
        (e) => e instanceof queuey.UnroutableError && e.message.includes(`returned unroutable by delay ladder exchange "${level}": its level queue is gone`),
      );
      // The channel goes on.
      await queuey.enqueue(conn, queue, 'p.T', {});
      const m = await get(queue);
      assert.notEqual(m.properties.messageId, 'ladder-return');
    } finally {
      await admin.deleteExchange(level);
    }
  });
});

test('a ladder is split when its level queue P.00.hi exists', async (t) => {
  await withBroker(t, async ({ conn, admin, queue, created, get }) => {
    // The check runs on a channel of its own, so the caller's channel
    // goes on after the broker says the queue is missing.
    const g = ladderGranularity();
    const prefix = `queuey.ladder.quorum.${g}ms`;
    const ch = await conn.createConfirmChannel();
    assert.equal(await queuey.ladderSplit(ch, { granularityMs: g }), false);
    await queuey.enqueue(ch, queue, 'p.T', {});
    await get(queue);
    // No ladder was declared, so the answer was not kept: once the
    // workers declare a split ladder, the same channel sees it.
    created.push(`${prefix}.00.hi`, `${prefix}.unrouted`);
    await admin.assertQueue(`${prefix}.00.hi`, { durable: true });
    await admin.assertQueue(`${prefix}.unrouted`, { durable: true });
    assert.equal(await queuey.ladderSplit(ch, { granularityMs: g }), true);
    assert.equal(await queuey.ladderSplit(conn, { granularityMs: g }), true);
    // A classic ladder is never split, whatever queues exist.
    assert.equal(await queuey.ladderSplit(conn, { queueType: 'classic', granularityMs: g }), false);
    await ch.close();
  });
});

test('a declared ladder without P.00.hi is not split, and the channel keeps the answer', async (t) => {
  await withBroker(t, async ({ conn, admin, created }) => {
    // Its unrouted queue, declared after every level queue, exists.
    const g = ladderGranularity();
    const prefix = `queuey.ladder.quorum.${g}ms`;
    created.push(`${prefix}.unrouted`, `${prefix}.00.hi`);
    await admin.assertQueue(`${prefix}.unrouted`, { durable: true });
    const ch = await conn.createConfirmChannel();
    assert.equal(await queuey.ladderSplit(ch, { granularityMs: g }), false);
    await admin.assertQueue(`${prefix}.00.hi`, { durable: true });
    assert.equal(await queuey.ladderSplit(ch, { granularityMs: g }), false);
    assert.equal(await queuey.ladderSplit(await conn.createConfirmChannel(), { granularityMs: g }), true);
    await ch.close();
  });
});

test('a hold queue declared with other arguments fails the enqueue, and the next one goes on', async (t) => {
  await withBroker(t, async ({ conn, admin, queue, created, get }) => {
    const hold = `${queue}.deferred.1000`;
    created.push(hold);
    await admin.assertQueue(hold, { durable: true, arguments: { 'x-message-ttl': 5 } });
    await assert.rejects(queuey.enqueue(conn, queue, 'p.T', {}, { delayMs: 1000 }), (e) => e instanceof queuey.QueueyError && !(e instanceof queuey.UnroutableError) && /PRECONDITION_FAILED/.test(e.message));
    await queuey.enqueue(conn, queue, 'p.T', {});
    await get(queue);
  });
});
