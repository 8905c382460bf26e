"""Enqueues the jobs of a plan through the queuey package, as installed,
for the Go test in clients/ (clients_test.go): the plan, JSON, on stdin;
one JSON line per job on stdout, {"i": index, "id": job ID}, then
{"done": true}.

Payload values written {"$int": "decimal"} are integers that JSON numbers
may not carry exactly. With "invalid" in the plan it also publishes a job
of another kind and a message that is not an envelope at all.
"""

import datetime
import json
import sys
import time

import pika

import queuey


def from_json(v):
    if isinstance(v, dict):
        if set(v) == {"$int"}:
            return int(v["$int"])
        return {k: from_json(x) for k, x in v.items()}
    if isinstance(v, list):
        return [from_json(x) for x in v]
    return v


def main():
    plan = json.load(sys.stdin)
    conn = pika.BlockingConnection(pika.URLParameters(plan["url"]))
    opts = dict(
        max_priority=plan["max_priority"],
        queue_type=plan["queue_type"],
        delay_mode=plan.get("delay_mode") or None,
        delay_exchange=plan.get("delay_exchange") or None,
        granularity_ms=plan["granularity_ms"],
    )
    start = time.monotonic()
    for i, job in enumerate(plan["jobs"]):
        delay = job.get("delay_ms") or None
        id_ = queuey.enqueue(
            conn, plan["queue"], plan["kind"], from_json(job["payload"]),
            priority=job.get("priority") or None,
            headers=job.get("headers"),
            delay=None if delay is None else datetime.timedelta(milliseconds=delay),
            **opts,
        )
        print(json.dumps({"i": i, "id": id_}), flush=False)
    elapsed = time.monotonic() - start
    if plan.get("invalid"):
        queuey.enqueue(conn, plan["queue"], plan["invalid_kind"], {"To": "x"}, job_id="wrong-kind", **opts)
        ch = conn.channel()
        ch.confirm_delivery()
        ch.basic_publish("", plan["queue"], b'{"CustomerID": "c"}',
                         pika.BasicProperties(content_type="application/json", message_id="not-an-envelope", delivery_mode=2),
                         mandatory=True)
    print(json.dumps({"done": True, "seconds": elapsed}), flush=True)
    conn.close()


if __name__ == "__main__":
    main()
