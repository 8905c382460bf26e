"""Measures how fast queuey.enqueue enqueues on this machine: confirmed
publishes, one in flight (pika's BlockingConnection waits for each
confirm), without and with a delay (a hold queue's declare before each
publish). It declares a queue of its own and deletes it after.

    python3 clients/python/bench.py [jobs]   # with the package installed (README.md)
"""

import datetime
import os
import sys
import time
import uuid

import pika

import queuey


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    url = os.environ.get("QUEUEY_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/")
    conn = pika.BlockingConnection(pika.URLParameters(url))
    admin = conn.channel()
    queue = f"bench.pyclient.{uuid.uuid4().hex[:12]}"
    admin.queue_declare(queue, durable=True, arguments={"x-max-priority": 10})
    payload = {"CustomerID": "cus_42", "Cents": 1999, "Currency": "EUR"}
    try:
        for name, opts in [("enqueue", {}), ("enqueue with a 60s delay", {"delay": datetime.timedelta(seconds=60)})]:
            queuey.enqueue(conn, queue, "emails.ChargeCard", payload, **opts)  # warm up
            start = time.perf_counter()
            for _ in range(n):
                queuey.enqueue(conn, queue, "emails.ChargeCard", payload, **opts)
            took = time.perf_counter() - start
            print(f"python {name}, 1 in flight: {n} jobs in {took:.2f}s: {n / took:,.0f} jobs/s")
    finally:
        admin.queue_delete(queue)
        admin.queue_delete(f"{queue}.deferred.60000")
        conn.close()


if __name__ == "__main__":
    main()
