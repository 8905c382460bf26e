'use strict';
// Enqueues the jobs of a plan through the queuey-client package, as
// installed in the project it runs in, for the Go test in clients/
// (clients_test.go): the plan, JSON, on stdin; one JSON line per job on
// stdout, {"i": index, "id": job ID}, then {"done": true}.
// Up to plan.window enqueues are in flight at once.
//
// Payload values written {"$int": "decimal"} are integers that JSON
// numbers may not carry exactly (sent as 64-bit integers). With "invalid"
// in the plan it also publishes a job of another kind and a message that
// is not an envelope at all.

const amqp = require('amqplib');
const queuey = require('queuey-client');

function fromJSON(v) {
  if (Array.isArray(v)) return v.map(fromJSON);
  if (v && typeof v === 'object') {
    const keys = Object.keys(v);
    if (keys.length === 1 && keys[0] === '$int') return BigInt(v.$int);
    return Object.fromEntries(keys.map((k) => [k, fromJSON(v[k])]));
  }
  return v;
}

async function readStdin() {
  const chunks = [];
  for await (const c of process.stdin) chunks.push(c);
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

async function main() {
  const plan = await readStdin();
  const conn = await amqp.connect(plan.url);
  const opts = {
    maxPriority: plan.max_priority,
    queueType: plan.queue_type,
    delayMode: plan.delay_mode || undefined,
    delayExchange: plan.delay_exchange || undefined,
    granularityMs: plan.granularity_ms,
  };
  const out = [];
  const start = process.hrtime.bigint();
  let next = 0;
  const window = Math.max(1, plan.window || 1);
  const worker = async () => {
    while (next < plan.jobs.length) {
      const i = next++;
      const job = plan.jobs[i];
      const id = await queuey.enqueue(conn, plan.queue, plan.kind, fromJSON(job.payload), {
        ...opts,
        priority: job.priority || 0,
        headers: job.headers || undefined,
        delayMs: job.delay_ms || undefined,
      });
      out.push(JSON.stringify({ i, id }));
    }
  };
  await Promise.all(Array.from({ length: window }, worker));
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  if (plan.invalid) {
    await queuey.enqueue(conn, plan.queue, plan.invalid_kind, { To: 'x' }, { ...opts, jobId: 'wrong-kind' });
    const ch = await conn.createConfirmChannel();
    ch.publish('', plan.queue, Buffer.from('{"CustomerID": "c"}'), { contentType: 'application/json', messageId: 'not-an-envelope', persistent: true, mandatory: true });
    await ch.waitForConfirms();
  }
  out.push(JSON.stringify({ done: true, seconds }));
  process.stdout.write(`${out.join('\n')}\n`);
  await conn.close();
}

main().catch((e) => {
  process.stderr.write(`${e.stack || e}\n`);
  process.exit(1);
});
