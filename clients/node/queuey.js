'use strict';
// Enqueue queuey jobs from Node.js, for Go workers to run.
//
// The messages follow format 1 of queuey's wire format (docs/wire-format.md
// in the queuey repository): publisher confirms, mandatory publishes, the
// envelope's fields in a msgpack array followed by the msgpack payload,
// and delays held where the Go backend holds them: its hold queues, its
// delay ladder or the plugin's exchange, as the queue's delay mode says.
//
//   const amqp = require('amqplib');
//   const queuey = require('queuey-client');
//   const conn = await amqp.connect('amqp://guest:guest@127.0.0.1:5672/');
//   const id = await queuey.enqueue(conn, 'emails.send_email', 'emails.SendEmail',
//     { To: 'ada@example.com', Subject: 'Welcome' }, { delayMs: 30_000 });
//
// The payload's keys are the Go struct's field names (or the names in its
// msgpack tags): "To", not "to". Enqueues may run concurrently: each waits
// for its own confirm, many in flight on one channel. JavaScript has no
// duration type, so a delay is delayMs, in milliseconds, the unit in its
// name; an option enqueue does not know (such as delay) is refused.

const crypto = require('node:crypto');
const { encode: msgpackEncode } = require('@msgpack/msgpack');

/** The content type of every job message: format 1. */
const CONTENT_TYPE = 'application/vnd.queuey.envelope+msgpack';
/** Job headers whose names start with this are queuey's own. */
const RESERVED_HEADER_PREFIX = 'queuey-';
/** The annotation's default max_attempts: what enqueue writes in the body. Workers run a job by their queue's max_attempts, whatever the body says. */
const DEFAULT_MAX_ATTEMPTS = 5;
/** The annotation's default max_priority. */
const DEFAULT_MAX_PRIORITY = 10;
/** The Go backend's default granularity, in milliseconds. */
const DEFAULT_GRANULARITY_MS = 1000;
/** runtime.MaxDeferral in nanoseconds, as a BigInt: (2^32-1) ms / 2. */
const MAX_DEFERRAL_NS = ((2n ** 32n - 1n) * 1000000n) / 2n;
/** The longest AMQP short string, in bytes. */
const MAX_SHORT_STRING = 255;
/** How many envelope fields the body's array holds. */
const BODY_FIELDS = 7;
/** How many times a delayed publish is tried when its hold queue is gone. */
const HOLD_TRIES = 3;
/** The start of the names of the delay ladders' exchanges and queues. */
const LADDER_PREFIX = 'queuey.ladder.';
/**
 * The least priority a split ladder (quorum, on RabbitMQ 4.x) holds apart:
 * a wait of this priority or more has its set bits written "h".
 */
const LADDER_HIGH_PRIORITY = 5;
const MAX_INT32 = 2 ** 31 - 1;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** A job was not enqueued. */
class QueueyError extends Error {
  constructor(message) {
    super(message);
    this.name = this.constructor.name;
  }
}
/** The broker returned the publish: no queue took it (the queue does not exist: no worker declared it yet). */
class UnroutableError extends QueueyError {}
/** The broker nacked the publish: it did not store the job. */
class NackedError extends QueueyError {}
/** The job breaks the wire format's rules; nothing was published. */
class InvalidJobError extends QueueyError {}
/** A body is not a format 1 envelope (decodeBody). */
class InvalidEnvelopeError extends Error {
  constructor(message) {
    super(message);
    this.name = 'InvalidEnvelopeError';
  }
}

// --- the body ----------------------------------------------------------------

function uintBytes(n) {
  // n: a non-negative number or bigint
  const b = BigInt(n);
  if (b <= 0x7fn) return Buffer.from([Number(b)]);
  if (b <= 0xffn) return Buffer.from([0xcc, Number(b)]);
  if (b <= 0xffffn) {
    const x = Buffer.alloc(3);
    x[0] = 0xcd;
    x.writeUInt16BE(Number(b), 1);
    return x;
  }
  if (b <= 0xffffffffn) {
    const x = Buffer.alloc(5);
    x[0] = 0xce;
    x.writeUInt32BE(Number(b), 1);
    return x;
  }
  const x = Buffer.alloc(9);
  x[0] = 0xcf;
  x.writeBigUInt64BE(b, 1);
  return x;
}

function intBytes(n) {
  const b = BigInt(n);
  if (b >= 0n) return uintBytes(b);
  const x = Buffer.alloc(9);
  x[0] = 0xd3;
  x.writeBigInt64BE(b, 1);
  return x;
}

function strBytes(s) {
  const b = Buffer.from(s, 'utf8');
  const n = b.length;
  let head;
  if (n <= 31) head = Buffer.from([0xa0 | n]);
  else if (n <= 0xff) head = Buffer.from([0xd9, n]);
  else if (n <= 0xffff) {
    head = Buffer.alloc(3);
    head[0] = 0xda;
    head.writeUInt16BE(n, 1);
  } else {
    head = Buffer.alloc(5);
    head[0] = 0xdb;
    head.writeUInt32BE(n, 1);
  }
  return Buffer.concat([head, b]);
}

function mapLenBytes(n) {
  if (n <= 15) return Buffer.from([0x80 | n]);
  if (n <= 0xffff) {
    const x = Buffer.alloc(3);
    x[0] = 0xde;
    x.writeUInt16BE(n, 1);
    return x;
  }
  const x = Buffer.alloc(5);
  x[0] = 0xdf;
  x.writeUInt32BE(n, 1);
  return x;
}

function utf8Len(s) {
  return Buffer.byteLength(s, 'utf8');
}

function checkEnvelope(env) {
  const short = (name, v, emptyOk) => {
    if (typeof v !== 'string') throw new InvalidJobError(`${name} must be a string, not ${typeof v}`);
    const n = utf8Len(v);
    if (n === 0 && !emptyOk) throw new InvalidJobError(`${name} must not be empty`);
    if (n > MAX_SHORT_STRING) throw new InvalidJobError(`${name} is ${n} bytes, want at most ${MAX_SHORT_STRING} (an AMQP short string)`);
  };
  const ranged = (name, v, lo, hi) => {
    if (!Number.isSafeInteger(v) || v < lo || v > hi) throw new InvalidJobError(`${name} = ${v}, want an integer in ${lo}..${hi}`);
  };
  short('job id', env.id);
  short('queue', env.queue);
  short('kind', env.kind, true);
  ranged('attempt', env.attempt, 1, MAX_INT32);
  ranged('maxAttempts', env.maxAttempts, 1, MAX_INT32);
  ranged('priority', env.priority, 0, 255);
  const at = BigInt(env.enqueuedAtNs ?? 0n);
  if (at < INT64_MIN || at > INT64_MAX) throw new InvalidJobError(`enqueuedAtNs = ${at}, want an int64`);
  if (typeof (env.lastError ?? '') !== 'string') throw new InvalidJobError('lastError must be a string');
  if (env.headers != null) {
    for (const [k, v] of Object.entries(env.headers)) {
      if (typeof v !== 'string') throw new InvalidJobError(`job header ${JSON.stringify(k)}: values must be strings, not ${typeof v}`);
    }
  }
  if (!(env.payload instanceof Uint8Array) || env.payload.length === 0) {
    throw new InvalidJobError('payload must be one msgpack value, as a Buffer or Uint8Array');
  }
}

function compareBytes(a, b) {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/**
 * The body of env, byte for byte as the Go codec writes it: the 7 fields
 * in the shortest encodings (int 64 for a negative enqueuedAtNs), job
 * headers sorted by name, then the payload.
 */
function encodeBody(env) {
  const e = { attempt: 1, maxAttempts: DEFAULT_MAX_ATTEMPTS, priority: 0, enqueuedAtNs: 0n, lastError: '', headers: null, ...env };
  checkEnvelope(e);
  const parts = [Buffer.from([0x90 | BODY_FIELDS])];
  parts.push(uintBytes(e.attempt), uintBytes(e.maxAttempts), uintBytes(e.priority), intBytes(e.enqueuedAtNs));
  parts.push(strBytes(e.queue), strBytes(e.lastError ?? ''));
  if (e.headers == null) {
    parts.push(Buffer.from([0xc0]));
  } else {
    const names = Object.keys(e.headers).sort(compareBytes);
    parts.push(mapLenBytes(names.length));
    for (const k of names) parts.push(strBytes(k), strBytes(e.headers[k]));
  }
  parts.push(Buffer.from(e.payload.buffer, e.payload.byteOffset, e.payload.length));
  return Buffer.concat(parts);
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

// A reader of msgpack that trusts nothing: what decodeBody needs.
class Reader {
  constructor(b) {
    this.b = b;
    this.off = 0;
  }
  need(n) {
    if (this.off + n > this.b.length) throw new InvalidEnvelopeError(`${n} bytes claimed at byte ${this.off}, ${this.b.length - this.off} left`);
  }
  u8() {
    this.need(1);
    return this.b[this.off++];
  }
  uint(size) {
    this.need(size);
    const o = this.off;
    this.off += size;
    switch (size) {
      case 1:
        return BigInt(this.b[o]);
      case 2:
        return BigInt(this.b.readUInt16BE(o));
      case 4:
        return BigInt(this.b.readUInt32BE(o));
      default:
        return this.b.readBigUInt64BE(o);
    }
  }
  sint(size) {
    this.need(size);
    const o = this.off;
    this.off += size;
    switch (size) {
      case 1:
        return BigInt(this.b.readInt8(o));
      case 2:
        return BigInt(this.b.readInt16BE(o));
      case 4:
        return BigInt(this.b.readInt32BE(o));
      default:
        return this.b.readBigInt64BE(o);
    }
  }
  arrayLen() {
    const c = this.u8();
    if ((c & 0xf0) === 0x90) return c & 0x0f;
    if (c === 0xdc) return Number(this.uint(2));
    if (c === 0xdd) return Number(this.uint(4));
    throw new InvalidEnvelopeError(`type 0x${c.toString(16)}, want an array`);
  }
  int() {
    const c = this.u8();
    if (c <= 0x7f) return BigInt(c);
    if (c >= 0xe0) return BigInt(c - 0x100);
    if (c >= 0xcc && c <= 0xcf) {
      const u = this.uint(1 << (c - 0xcc));
      if (u > INT64_MAX) throw new InvalidEnvelopeError(`${u} does not fit an int64`);
      return u;
    }
    if (c >= 0xd0 && c <= 0xd3) return this.sint(1 << (c - 0xd0));
    throw new InvalidEnvelopeError(`type 0x${c.toString(16)}, want an integer`);
  }
  string(nilOk = false) {
    const c = this.u8();
    let n;
    if (c === 0xc0) {
      if (nilOk) return '';
      throw new InvalidEnvelopeError('nil, want a string');
    }
    if ((c & 0xe0) === 0xa0) n = c & 0x1f;
    else if (c === 0xd9) n = Number(this.uint(1));
    else if (c === 0xda) n = Number(this.uint(2));
    else if (c === 0xdb) n = Number(this.uint(4));
    else throw new InvalidEnvelopeError(`type 0x${c.toString(16)}, want a string`);
    this.need(n);
    let s;
    try {
      s = utf8.decode(this.b.subarray(this.off, this.off + n));
    } catch {
      throw new InvalidEnvelopeError('not UTF-8');
    }
    this.off += n;
    return s;
  }
  mapLen() {
    const c = this.u8();
    if (c === 0xc0) return null;
    if ((c & 0xf0) === 0x80) return c & 0x0f;
    if (c === 0xde) return Number(this.uint(2));
    if (c === 0xdf) return Number(this.uint(4));
    throw new InvalidEnvelopeError(`type 0x${c.toString(16)}, want a map`);
  }
  // skip skips one value of any type, without recursion.
  skip() {
    let left = 1;
    while (left > 0) {
      left--;
      const c = this.u8();
      const skipBytes = (n) => {
        this.need(n);
        this.off += n;
      };
      if (c <= 0x7f || c >= 0xe0 || c === 0xc0 || c === 0xc2 || c === 0xc3) continue;
      if ((c & 0xe0) === 0xa0) skipBytes(c & 0x1f);
      else if ((c & 0xf0) === 0x90) left += c & 0x0f;
      else if ((c & 0xf0) === 0x80) left += 2 * (c & 0x0f);
      else if (c === 0xc4 || c === 0xd9) skipBytes(Number(this.uint(1)));
      else if (c === 0xc5 || c === 0xda) skipBytes(Number(this.uint(2)));
      else if (c === 0xc6 || c === 0xdb) skipBytes(Number(this.uint(4)));
      else if (c === 0xc7) skipBytes(Number(this.uint(1)) + 1);
      else if (c === 0xc8) skipBytes(Number(this.uint(2)) + 1);
      else if (c === 0xc9) skipBytes(Number(this.uint(4)) + 1);
      else if (c === 0xca) skipBytes(4);
      else if (c === 0xcb) skipBytes(8);
      else if (c >= 0xcc && c <= 0xcf) skipBytes(1 << (c - 0xcc));
      else if (c >= 0xd0 && c <= 0xd3) skipBytes(1 << (c - 0xd0));
      else if (c >= 0xd4 && c <= 0xd8) skipBytes((1 << (c - 0xd4)) + 1);
      else if (c === 0xdc) left += Number(this.uint(2));
      else if (c === 0xdd) left += Number(this.uint(4));
      else if (c === 0xde) left += 2 * Number(this.uint(2));
      else if (c === 0xdf) left += 2 * Number(this.uint(4));
      else throw new InvalidEnvelopeError(`type 0x${c.toString(16)} is not msgpack`);
    }
  }
}

/**
 * The envelope a message carries, checked as a Go worker's decoder checks
 * it: the message's contentType, messageId (a string, or a Buffer as it
 * came), type (kind) and expiration properties, and its body. Throws
 * InvalidEnvelopeError saying what is wrong. The payload is returned as
 * it is: a worker checks it against the job's type.
 */
function decodeBody(body, { contentType, messageId, type, expiration } = {}) {
  if (contentType !== CONTENT_TYPE) throw new InvalidEnvelopeError(`content type ${JSON.stringify(contentType ?? '')}, want ${JSON.stringify(CONTENT_TYPE)}`);
  if (!messageId || messageId.length === 0) throw new InvalidEnvelopeError('empty message id');
  if (typeof messageId !== 'string') {
    try {
      messageId = utf8.decode(messageId);
    } catch {
      throw new InvalidEnvelopeError(`message id ${Buffer.from(messageId).toString('hex')} (hex) is not UTF-8`);
    }
  }
  if (expiration) throw new InvalidEnvelopeError(`expiration ${JSON.stringify(String(expiration))} set: a job must not expire`);
  const r = new Reader(Buffer.from(body.buffer, body.byteOffset, body.length));
  const at = (name, f) => {
    try {
      return f();
    } catch (e) {
      throw new InvalidEnvelopeError(`${name}: ${e.message}`);
    }
  };
  const n = at("body does not start with the envelope's fields", () => r.arrayLen());
  if (n < BODY_FIELDS) throw new InvalidEnvelopeError(`body does not start with the envelope's fields: ${n} fields, want at least ${BODY_FIELDS}`);
  const int = (name, lo, hi) => {
    const v = at(name, () => r.int());
    if (v < lo || v > hi) throw new InvalidEnvelopeError(`${name} = ${v}, want ${lo}..${hi}`);
    return v;
  };
  const attempt = Number(int('attempt', 1n, BigInt(MAX_INT32)));
  const maxAttempts = Number(int('max attempts', 1n, BigInt(MAX_INT32)));
  const priority = Number(int('priority', 0n, 255n));
  const enqueuedAtNs = int('enqueued at', INT64_MIN, INT64_MAX);
  const queue = at('queue', () => r.string());
  if (queue === '') throw new InvalidEnvelopeError('queue is empty');
  const lastError = at('last error', () => r.string(true));
  const nh = at('headers', () => r.mapLen());
  let headers = null;
  if (nh !== null) {
    headers = {};
    for (let i = 0; i < nh; i++) {
      const k = at('header name', () => r.string());
      const v = at(`header ${JSON.stringify(k)}`, () => r.string());
      if (Object.hasOwn(headers, k)) throw new InvalidEnvelopeError(`header ${JSON.stringify(k)} appears twice: a name appears at most once`);
      headers[k] = v;
    }
  }
  for (let i = BODY_FIELDS; i < n; i++) at(`field ${i + 1}`, () => r.skip());
  return {
    id: messageId,
    kind: type ?? '',
    queue,
    attempt,
    maxAttempts,
    priority,
    enqueuedAtNs,
    lastError,
    headers,
    payload: r.b.subarray(r.off),
  };
}

// --- the payload ---------------------------------------------------------------

/**
 * payload, a plain object (or a Map), as msgpack: strings as str,
 * Buffers and Uint8Arrays as bin, a Date as the timestamp extension (a Go
 * time.Time), a bigint as a 64-bit integer, undefined fields left out.
 */
function encodePayload(payload) {
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload) || payload instanceof Uint8Array) {
    throw new InvalidJobError(`payload must be an object whose keys are the Go struct's field names, not ${Array.isArray(payload) ? 'an array' : typeof payload}`);
  }
  try {
    return msgpackEncode(payload, { useBigInt64: true, ignoreUndefined: true });
  } catch (e) {
    throw new InvalidJobError(`payload does not encode as msgpack: ${e.message}`);
  }
}

// --- ids and delays -------------------------------------------------------------

/** A new job ID: a UUIDv7, as Go's producer makes them. */
function newId() {
  const b = crypto.randomBytes(16);
  const ms = BigInt(Date.now());
  for (let i = 0; i < 6; i++) b[i] = Number((ms >> BigInt(8 * (5 - i))) & 0xffn);
  b[6] = 0x70 | (b[6] & 0x0f);
  b[8] = 0x80 | (b[8] & 0x3f);
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** delay in milliseconds (a number, fractions allowed) in nanoseconds, rounded up. */
function delayNs(delay) {
  if (typeof delay !== 'number' || !Number.isFinite(delay)) throw new InvalidJobError(`delay = ${delay}, want milliseconds`);
  if (Number.isInteger(delay)) return BigInt(delay) * 1000000n;
  return BigInt(Math.ceil(delay * 1e6));
}

/** granularityMs, checked, in nanoseconds (a bigint). */
function granularityNs(granularityMs) {
  if (!Number.isInteger(granularityMs) || granularityMs < 1 || granularityMs > 3600000) {
    throw new InvalidJobError(`granularityMs = ${granularityMs}, want 1..3600000 (the workers' rabbitmq.Options.Granularity)`);
  }
  return BigInt(granularityMs) * 1000000n;
}

/** delay (ms) rounded up to the granularity, at least one, at most runtime.MaxDeferral: in ms. */
function roundDelay(delay, granularityMs = DEFAULT_GRANULARITY_MS) {
  const g = granularityNs(granularityMs);
  let d = delayNs(delay);
  if (d < g) d = g;
  const r = ((d + g - 1n) / g) * g;
  if (d > MAX_DEFERRAL_NS || r > MAX_DEFERRAL_NS) {
    throw new InvalidJobError(`delay of ${delay} ms, rounded up to ${r / 1000000n} ms, is over the longest wait, about 24.8 days (runtime.MaxDeferral)`);
  }
  return Number(r / 1000000n);
}

function bitLen(n) {
  return n === 0 ? 0 : Math.floor(Math.log2(n)) + 1;
}

function ladderUp(u) {
  if (u <= 8) return u;
  const step = 2 ** (bitLen(u - 1) - 3);
  return Math.ceil(u / step) * step;
}

/** The wait (ms) a quorum hold queue holds a delay of ttlMs, already rounded up to the granularity: the next rung of the ladder. */
function quorumRung(ttlMs, granularityMs = DEFAULT_GRANULARITY_MS) {
  const u = Math.floor(ttlMs / granularityMs);
  const top = Number(MAX_DEFERRAL_NS / (BigInt(granularityMs) * 1000000n));
  return Math.min(ladderUp(u), top) * granularityMs;
}

/** The hold queue a delayed enqueue onto queue goes through, exactly as the Go backend declares it. */
function holdQueue(queue, delay, { queueType = 'classic', granularityMs = DEFAULT_GRANULARITY_MS } = {}) {
  let ttl = roundDelay(delay, granularityMs);
  let args;
  if (queueType === 'quorum') {
    ttl = quorumRung(ttl, granularityMs);
    args = {
      'x-queue-type': 'quorum',
      'x-message-ttl': ttl,
      'x-dead-letter-exchange': '',
      'x-dead-letter-routing-key': queue,
      'x-dead-letter-strategy': 'at-least-once',
      'x-overflow': 'reject-publish',
    };
  } else if (queueType === 'classic') {
    args = {
      'x-queue-type': 'classic',
      'x-message-ttl': ttl,
      'x-dead-letter-exchange': '',
      'x-dead-letter-routing-key': queue,
      'x-expires': ttl + Math.max(ttl, 1000),
    };
  } else {
    throw new InvalidJobError(`queueType = ${JSON.stringify(queueType)}, want "classic" or "quorum"`);
  }
  return { name: `${queue}.deferred.${ttl}`, arguments: args, ttlMs: ttl };
}

/**
 * N, the number of levels of the delay ladder at granularityMs: the bit
 * length of the longest wait in granularities (22 at 1000 ms, 31 at 1 ms).
 * A ladder-mode queue's name is at most 255 - 2N bytes.
 */
function ladderLevels(granularityMs = DEFAULT_GRANULARITY_MS) {
  return (MAX_DEFERRAL_NS / granularityNs(granularityMs)).toString(2).length;
}

/**
 * Where a delayed enqueue onto queue, a ladder-mode queue (delay=ladder),
 * is published, exactly as the Go backend publishes its waits: the wait
 * (delayMs rounded up to granularityMs, at least one), the exchange of the
 * ladder level of its highest set bit, and the routing key of its N bits,
 * most significant first, then queue. On a split ladder (split: a quorum
 * ladder on RabbitMQ 4.x, as ladderSplit says) the set bits of a job of
 * priority LADDER_HIGH_PRIORITY or more are "h" instead of "1". Throws
 * InvalidJobError for a negative delay, a wait over runtime.MaxDeferral, a
 * name too long for the key, and a split classic ladder.
 */
function ladderWait(queue, delayMs, { queueType = 'classic', granularityMs = DEFAULT_GRANULARITY_MS, priority = 0, split = false } = {}) {
  if (typeof delayMs !== 'number' || !(delayMs >= 0)) throw new InvalidJobError(`delayMs = ${delayMs}, want 0 or more milliseconds`);
  if (queueType !== 'classic' && queueType !== 'quorum') throw new InvalidJobError(`queueType = ${JSON.stringify(queueType)}, want "classic" or "quorum"`);
  if (typeof queue !== 'string' || queue === '') throw new InvalidJobError(`queue = ${JSON.stringify(queue)}, want the queue's name`);
  if (split && queueType !== 'quorum') throw new InvalidJobError(`split = true for a ${queueType} ladder: only a quorum ladder on RabbitMQ 4.x is split`);
  if (!Number.isInteger(priority) || priority < 0 || priority > 255) throw new InvalidJobError(`priority = ${priority}, want 0..255`);
  const waitMs = roundDelay(delayMs, granularityMs);
  const levels = ladderLevels(granularityMs);
  const n = utf8Len(queue);
  if (n > MAX_SHORT_STRING - 2 * levels) {
    throw new InvalidJobError(
      `queue ${JSON.stringify(queue)} is ${n} bytes: a ladder-mode queue's name is at most ${MAX_SHORT_STRING - 2 * levels} bytes ` +
        `at a granularity of ${granularityMs} ms (255 less 2 for each of the ladder's ${levels} levels), so that a wait's routing key fits an AMQP short string`,
    );
  }
  const bits = (waitMs / granularityMs).toString(2);
  const one = split && priority >= LADDER_HIGH_PRIORITY ? 'h' : '1';
  const words = bits
    .padStart(levels, '0')
    .split('')
    .map((b) => (b === '1' ? one : b));
  return {
    exchange: `${LADDER_PREFIX}${queueType}.${granularityMs}ms.${String(bits.length - 1).padStart(2, '0')}`,
    routingKey: `${words.join('.')}.${queue}`,
    waitMs,
    levels,
  };
}

// --- publishing -------------------------------------------------------------------

// State of one channel: what it has checked and declared, the publishes
// awaiting their confirms by message id, and the returns not yet paired.
class ChannelState {
  constructor(channel, owned) {
    this.channel = channel;
    this.owned = owned;
    this.closed = null;
    this.checked = new Set();
    this.quorumHolds = new Set();
    this.split = new Map(); // ladder prefix -> whether it is split, once it is declared
    this.inFlight = new Map(); // message id -> { returned, done }
    channel.on('return', (msg) => {
      const p = this.inFlight.get(msg.properties.messageId);
      if (p) p.returned = true;
    });
    channel.on('error', (err) => {
      this.closed = err;
    });
    channel.on('close', () => {
      this.closed = this.closed || new Error('channel closed');
    });
  }

  // publish publishes and resolves once the broker has confirmed it. A
  // publish with the message id of one in flight waits for that one's
  // confirm first, so that a return is paired with its own publish.
  async publish(exchange, key, body, options) {
    const id = options.messageId;
    for (let p = this.inFlight.get(id); p; p = this.inFlight.get(id)) {
      await p.done.catch(() => {});
    }
    const rec = { returned: false };
    rec.done = new Promise((resolve, reject) => {
      this.channel.publish(exchange, key, body, options, (err) => {
        if (this.inFlight.get(id) === rec) this.inFlight.delete(id);
        if (err) {
          reject(this.closed ? notConfirmed(key, id, this.closed) : new NackedError(`publish to ${JSON.stringify(key)} was nacked by the broker: the job was not stored`));
        } else if (rec.returned) {
          reject(new UnroutableError(`publish to ${JSON.stringify(key)} returned unroutable: no queue ${JSON.stringify(key)} (has a worker declared it?)`));
        } else {
          resolve();
        }
      });
    });
    this.inFlight.set(id, rec);
    return rec.done;
  }
}

function notConfirmed(key, id, cause) {
  return new QueueyError(`publish to ${JSON.stringify(key)}: not confirmed (${cause.message}): it may or may not be stored; enqueue it again with jobId ${JSON.stringify(id)}`);
}

const states = new WeakMap();

async function stateOf(target) {
  let st = states.get(target);
  if (st) {
    const s = await st;
    if (!s.closed) return s;
    states.delete(target);
  }
  st = (async () => {
    if (target && typeof target.createConfirmChannel === 'function') {
      return new ChannelState(await target.createConfirmChannel(), true);
    }
    if (target && typeof target.waitForConfirms === 'function') {
      return new ChannelState(target, false);
    }
    throw new TypeError('want an amqplib connection or ConfirmChannel (a channel made by createConfirmChannel)');
  })();
  states.set(target, st);
  try {
    return await st;
  } catch (e) {
    states.delete(target);
    throw e;
  }
}

async function passive(st, check, missing) {
  try {
    await check();
  } catch (e) {
    if (e && e.code === 404) throw missing;
    throw e;
  }
}

/**
 * The delay mode of a queue of queueType whose annotation names none, on
 * workers whose rabbitmq.Options.Delay names none, as Go's
 * runtime.DefaultDelay says: "ladder" for a quorum queue, "queue" (hold
 * queues) for a classic one. enqueue uses it when given no delayMode.
 */
function defaultDelay(queueType) {
  return queueType === 'quorum' ? 'ladder' : 'queue';
}

/**
 * Enqueue one job of kind (the Go type, "emails.SendEmail") onto queue and
 * resolve to its ID once the broker has confirmed it. See queuey.d.ts.
 */
const ENQUEUE_OPTIONS = new Set(['priority', 'jobId', 'headers', 'delayMs', 'maxPriority', 'queueType', 'delayMode', 'delayExchange', 'granularityMs']);

async function enqueue(target, queue, kind, payload, opts = {}) {
  for (const name of Object.keys(opts ?? {})) {
    if (ENQUEUE_OPTIONS.has(name)) continue;
    if (name === 'delay') throw new InvalidJobError('unknown option "delay": give delayMs, the delay in milliseconds');
    if (name === 'maxAttempts') throw new InvalidJobError('unknown option "maxAttempts": workers run a job by their queue\'s max_attempts, whatever a producer says');
    throw new InvalidJobError(`unknown option ${JSON.stringify(name)}; want one of ${[...ENQUEUE_OPTIONS].join(', ')}`);
  }
  const {
    priority = 0,
    jobId,
    headers,
    delayMs: delay,
    maxPriority = DEFAULT_MAX_PRIORITY,
    queueType = 'classic',
    delayMode = defaultDelay(queueType),
    delayExchange,
    granularityMs = DEFAULT_GRANULARITY_MS,
  } = opts ?? {};
  if (!Number.isInteger(maxPriority) || maxPriority < 0 || maxPriority > 255) {
    throw new InvalidJobError(`maxPriority = ${maxPriority}, want the queue's max_priority, 0..255 (0: no priorities)`);
  }
  if (!Number.isInteger(priority) || priority < 0 || priority > maxPriority) {
    if (maxPriority === 0) throw new InvalidJobError(`queue ${JSON.stringify(queue)}: priority ${priority}, want 0: the queue declares no priority (max_priority=0)`);
    throw new InvalidJobError(`queue ${JSON.stringify(queue)}: priority ${priority}, want 0..${maxPriority} (the queue's max_priority)`);
  }
  if (typeof kind !== 'string' || kind === '') {
    throw new InvalidJobError(`kind = ${JSON.stringify(kind)}: want the job's Go type, package.Type, as its generated XQueue.Kind says`);
  }
  let hs = null;
  if (headers != null) {
    hs = { ...headers };
    const reserved = Object.keys(hs)
      .filter((k) => k.startsWith(RESERVED_HEADER_PREFIX))
      .sort();
    if (reserved.length) {
      throw new InvalidJobError(`queue ${JSON.stringify(queue)}: header ${JSON.stringify(reserved[0])} is reserved: queuey sets the headers whose names start with ${JSON.stringify(RESERVED_HEADER_PREFIX)} itself; rename it`);
    }
  }
  if (delay != null && (typeof delay !== 'number' || !(delay >= 0))) throw new InvalidJobError(`delayMs = ${delay}, want 0 or more milliseconds`);
  const delayed = delay != null && delay > 0;
  if (delayed && delayMode !== 'queue' && delayMode !== 'ladder' && delayMode !== 'plugin') {
    throw new InvalidJobError(`delayMode = ${JSON.stringify(delayMode)}, want "queue", "ladder" or "plugin"`);
  }
  const nowMs = Date.now();
  const env = {
    id: jobId === undefined ? newId() : jobId,
    queue,
    kind,
    payload: encodePayload(payload),
    attempt: 1,
    maxAttempts: DEFAULT_MAX_ATTEMPTS,
    priority,
    enqueuedAtNs: BigInt(nowMs) * 1000000n,
    lastError: '',
    headers: hs,
  };
  const body = encodeBody(env);
  const options = {
    contentType: CONTENT_TYPE,
    messageId: env.id,
    type: kind,
    timestamp: Math.floor(nowMs / 1000),
    persistent: true,
    mandatory: true,
  };
  if (priority) options.priority = priority;
  let hold;
  let ladder;
  if (delayed && delayMode === 'queue') {
    hold = holdQueue(queue, delay, { queueType, granularityMs });
  } else if (delayed && delayMode === 'ladder') {
    ladder = ladderWait(queue, delay, { queueType, granularityMs });
  } else if (delayed) {
    const ms = roundDelay(delay, granularityMs);
    if (ms > MAX_INT32) throw new InvalidJobError(`delay of ${ms} ms is over the plugin's x-delay limit (${MAX_INT32} ms)`);
    options.headers = { 'x-delay': { '!': 'int', value: ms } }; // a signed 32-bit value, as Go sends it
    options.mandatory = false;
  }

  const st = await stateOf(target);
  try {
    if (!delayed) {
      await st.publish('', queue, body, options);
    } else if (delayMode === 'plugin') {
      const exchange = delayExchange || `${queue}.delay`;
      if (!st.checked.has(`exchange ${exchange}`)) {
        await passive(
          st,
          () => st.channel.checkExchange(exchange),
          new UnroutableError(`delay exchange ${JSON.stringify(exchange)} of queue ${JSON.stringify(queue)} does not exist: has a worker declared the queue with delay=plugin, with the delayed-message plugin enabled?`),
        );
        st.checked.add(`exchange ${exchange}`);
      }
      await st.publish(exchange, queue, body, options);
    } else if (delayMode === 'ladder') {
      if (queueType === 'quorum' && priority >= LADDER_HIGH_PRIORITY && (await splitOf(st, queueType, granularityMs))) {
        ladder = ladderWait(queue, delay, { queueType, granularityMs, priority, split: true });
      }
      await ladderPublish(st, queue, queueType, granularityMs, ladder, body, options);
    } else {
      await holdPublish(st, queue, queueType, hold, body, options);
    }
  } catch (e) {
    if (st.closed) states.delete(target);
    if (e instanceof QueueyError) throw e;
    if (e && typeof e.code === 'number') {
      throw new QueueyError(`enqueue onto ${JSON.stringify(queue)}: the broker closed the channel: ${e.message}`);
    }
    throw notConfirmed(queue, env.id, e);
  }
  return env.id;
}

// checkQueue checks once per channel that queue exists, before a delayed
// publish onto it: whenDue says what would become of a wait onto a
// missing queue.
async function checkQueue(st, queue, whenDue) {
  if (st.checked.has(`queue ${queue}`)) return;
  await passive(
    st,
    () => st.channel.checkQueue(queue),
    new UnroutableError(`queue ${JSON.stringify(queue)} does not exist (has a worker declared it?): a delayed job ${whenDue}`),
  );
  st.checked.add(`queue ${queue}`);
}

async function ladderPublish(st, queue, queueType, granularityMs, ladder, body, options) {
  // A due wait whose queue is missing goes to the ladder's unrouted
  // queue, where nothing runs it.
  await checkQueue(st, queue, "would not run: it would go to the delay ladder's unrouted queue when due");
  const level = ladder.exchange;
  if (!st.checked.has(`exchange ${level}`)) {
    // A publish to a missing exchange would close the channel, and say less.
    await passive(
      st,
      () => st.channel.checkExchange(level),
      new UnroutableError(
        `delay ladder exchange ${JSON.stringify(level)} does not exist: no worker has declared the ${queueType} delay ladder at a granularity of ${granularityMs} ms ` +
          `(is a worker of ${JSON.stringify(queue)} running, with delay=ladder and this granularity?)`,
      ),
    );
    st.checked.add(`exchange ${level}`);
  }
  try {
    await st.publish(level, ladder.routingKey, body, options);
  } catch (e) {
    if (!(e instanceof UnroutableError)) throw e;
    // The level's queue is gone: the ladder was deleted under its
    // workers. Declaring it is theirs to do (its arguments depend on the
    // broker, and they bind their queues to it).
    st.checked.delete(`exchange ${level}`);
    throw new UnroutableError(
      `wait onto ${JSON.stringify(queue)} returned unroutable by delay ladder exchange ${JSON.stringify(level)}: its level queue is gone, the ladder was deleted; ` +
        `the job was not stored: enqueue it again with jobId ${JSON.stringify(options.messageId)} once a worker has declared the ladder again`,
    );
  }
}

/**
 * Whether the delay ladder of queueType and granularityMs on the broker is
 * split: whether its workers declared the level queues of high priority, as
 * they do for a quorum ladder on RabbitMQ 4.x. The check is a passive
 * declare of the ladder's queue P.unrouted, which its workers declare
 * after every level queue, then of P.00.hi, on a channel of its own, which
 * the broker closes when a queue is missing. enqueue makes it for a job of
 * priority LADDER_HIGH_PRIORITY or more onto a quorum ladder, and keeps
 * the answer for the channel's life once the ladder is declared
 * (P.unrouted exists, or P.00.hi does); before that it checks again at the
 * next such job.
 */
async function ladderSplit(target, { queueType = 'quorum', granularityMs = DEFAULT_GRANULARITY_MS } = {}) {
  return splitOf(await stateOf(target), queueType, granularityMs);
}

async function splitOf(st, queueType, granularityMs) {
  if (queueType !== 'quorum') return false;
  const prefix = `${LADDER_PREFIX}${queueType}.${granularityMs}ms`;
  if (st.split.has(prefix)) return st.split.get(prefix);
  // The workers declare P.unrouted after every level queue: once it
  // exists, so does P.00.hi on a split ladder, and a missing P.00.hi says
  // that the ladder is not split. Before, a missing P.00.hi says only that
  // the ladder is not declared (yet).
  const declared = await queueExists(st, `${prefix}.unrouted`);
  const split = await queueExists(st, `${prefix}.00.hi`);
  if (split || declared) st.split.set(prefix, split);
  return split;
}

// queueExists says whether queue exists, by a passive declare. A passive
// declare of a missing queue closes its channel: it runs on one of its
// own, never on the caller's. A channel of the same class on the same
// connection serves whether the caller gave a connection or a channel.
async function queueExists(st, queue) {
  const ch = new st.channel.constructor(st.channel.connection);
  ch.on('error', () => {}); // the 404 rejects checkQueue too
  await ch.open();
  try {
    await ch.checkQueue(queue);
    return true;
  } catch (e) {
    if (!e || e.code !== 404) throw e;
    return false;
  } finally {
    await ch.close().catch(() => {});
  }
}

async function holdPublish(st, queue, queueType, hold, body, options) {
  const ch = st.channel;
  // The broker drops a hold queue's expired message silently when the
  // queue it dead-letters to is missing.
  await checkQueue(st, queue, 'would be dropped when due');
  let err;
  for (let i = 0; i < HOLD_TRIES; i++) {
    let declared = Promise.resolve();
    if (queueType !== 'quorum' || !st.quorumHolds.has(hold.name)) {
      // A classic hold queue's declare renews its lease: it comes right
      // before every publish. The publish follows it on the channel
      // without waiting for its answer: the broker handles a channel's
      // frames in order.
      declared = ch.assertQueue(hold.name, { durable: true, exclusive: false, autoDelete: false, arguments: hold.arguments });
      if (queueType === 'quorum') st.quorumHolds.add(hold.name);
    }
    const [d, p] = await Promise.allSettled([declared, st.publish('', hold.name, body, options)]);
    if (d.status === 'rejected') {
      st.quorumHolds.delete(hold.name);
      throw d.reason; // the publish failed with it: the declare closed the channel
    }
    try {
      if (p.status === 'rejected') throw p.reason;
      return;
    } catch (e) {
      if (!(e instanceof UnroutableError)) throw e;
      st.quorumHolds.delete(hold.name); // the hold queue expired meanwhile
      err = e;
    }
  }
  throw err;
}

module.exports = {
  CONTENT_TYPE,
  RESERVED_HEADER_PREFIX,
  DEFAULT_MAX_ATTEMPTS,
  DEFAULT_MAX_PRIORITY,
  DEFAULT_GRANULARITY_MS,
  QueueyError,
  UnroutableError,
  NackedError,
  InvalidJobError,
  InvalidEnvelopeError,
  enqueue,
  encodeBody,
  decodeBody,
  encodePayload,
  holdQueue,
  quorumRung,
  roundDelay,
  ladderLevels,
  ladderSplit,
  ladderWait,
  LADDER_HIGH_PRIORITY,
  defaultDelay,
  newId,
};
