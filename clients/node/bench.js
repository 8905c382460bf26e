'use strict';
// Measures how fast queuey.enqueue enqueues on this machine: confirmed
// publishes with 1 and with 64 in flight on one channel, without and with
// a delay (a hold queue's declare before each publish). It declares a
// queue of its own and deletes it after.
//
//   node clients/node/bench.js [jobs]

const crypto = require('node:crypto');
const amqp = require('amqplib');
const queuey = require('queuey-client');

async function main() {
  const n = Number(process.argv[2] || 5000);
  const url = process.env.QUEUEY_AMQP_URL || 'amqp://guest:guest@127.0.0.1:5672/';
  const conn = await amqp.connect(url);
  const admin = await conn.createChannel();
  const queue = `bench.nodeclient.${crypto.randomBytes(6).toString('hex')}`;
  await admin.assertQueue(queue, { durable: true, arguments: { 'x-max-priority': 10 } });
  const payload = { CustomerID: 'cus_42', Cents: 1999, Currency: 'EUR' };
  try {
    for (const [name, opts] of [
      ['enqueue', {}],
      ['enqueue with a 60s delay', { delayMs: 60000 }],
    ]) {
      for (const window of [1, 64]) {
        await queuey.enqueue(conn, queue, 'emails.ChargeCard', payload, opts); // warm up
        let next = 0;
        const start = process.hrtime.bigint();
        await Promise.all(
          Array.from({ length: window }, async () => {
            while (next < n) {
              next++;
              await queuey.enqueue(conn, queue, 'emails.ChargeCard', payload, opts);
            }
          }),
        );
        const took = Number(process.hrtime.bigint() - start) / 1e9;
        console.log(`node ${name}, ${window} in flight: ${n} jobs in ${took.toFixed(2)}s: ${Math.round(n / took).toLocaleString('en')} jobs/s`);
      }
    }
  } finally {
    await admin.deleteQueue(queue);
    await admin.deleteQueue(`${queue}.deferred.60000`);
    await conn.close();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
