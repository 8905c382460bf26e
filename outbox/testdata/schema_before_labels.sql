-- The outbox's schema: Migrate applies this file, whole, in one implicit
-- transaction; every statement is idempotent, and an advisory lock keeps
-- two Migrate calls from racing. Nothing else of queuey is written to the
-- application's database.
SELECT pg_advisory_xact_lock(7157431870552711234);

-- queuey_outbox holds jobs enqueued in a transaction (outbox.Producer) that
-- the relay has not yet published. A row is visible to the relay once its
-- transaction commits, and never before.
CREATE TABLE IF NOT EXISTS queuey_outbox (
	seq            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, -- insertion order, the relay's order
	id             text        NOT NULL UNIQUE, -- the job's ID, kept on the broker
	queue          text        NOT NULL,        -- the queue's name
	kind           text        NOT NULL,        -- the job's kind (emails.SendEmail)
	priority       smallint    NOT NULL,        -- the job's priority, 0..255
	max_attempts   integer     NOT NULL,        -- runs before the job is dead-lettered
	headers        jsonb,                       -- string headers (an object), NULL for none
	payload        bytea       NOT NULL,        -- the msgpack payload
	enqueued_at    timestamptz NOT NULL,        -- the envelope's enqueue time (the producer's clock)
	due_at         timestamptz,                 -- first run not before (the database's clock); NULL: at once
	queue_type     text,                        -- for a delayed job: the queue's type ("classic", "quorum")
	delay_mode     text,                        -- for a delayed job: how waits are held ("queue", "plugin")
	delay_exchange text                         -- for a delayed job: the plugin's exchange, if named
);

-- queuey_outbox_dead holds rows the broker refused for good (a queue that
-- does not exist, a job too large, an invalid row), with the reason; the
-- relay moves them here so that they never hold back the rows behind them.
CREATE TABLE IF NOT EXISTS queuey_outbox_dead (
	seq            bigint      NOT NULL,
	id             text        NOT NULL,
	queue          text        NOT NULL,
	kind           text        NOT NULL,
	priority       smallint    NOT NULL,
	max_attempts   integer     NOT NULL,
	headers        jsonb,
	payload        bytea       NOT NULL,
	enqueued_at    timestamptz NOT NULL,
	due_at         timestamptz,
	queue_type     text,
	delay_mode     text,
	delay_exchange text,
	reason         text        NOT NULL,               -- why the broker refused the job
	dead_at        timestamptz NOT NULL DEFAULT now()  -- when the relay moved it here
);

-- queuey_outbox_notify wakes listening relays when a transaction that
-- inserted into queuey_outbox commits, unless a relay is busy and so bound
-- to look again after this commit. It runs at commit (a deferred
-- constraint trigger), once per transaction. Each NOTIFY holds a
-- database-wide lock until its transaction's commit is flushed, which
-- would serialise every committing producer; under load relays are busy,
-- and commits skip it. The handshake, on two advisory locks keyed by the
-- table: a busy relay holds "busy" shared; a committing producer holds
-- "commit" shared and notifies only when it can take "busy" itself; a relay
-- going idle drops "busy", then takes and drops "commit", which waits for
-- every producer that skipped, and looks once more.
CREATE OR REPLACE FUNCTION queuey_outbox_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	IF current_setting('queuey.outbox_notify_done', true) = 'on' THEN
		RETURN NULL;
	END IF;
	PERFORM set_config('queuey.outbox_notify_done', 'on', true);
	PERFORM pg_advisory_xact_lock_shared((1364541184::bigint << 32) | TG_RELID::bigint); -- "commit"
	IF pg_try_advisory_xact_lock((1364541185::bigint << 32) | TG_RELID::bigint) THEN     -- "busy"
		PERFORM pg_notify('queuey_outbox', '');
	END IF;
	RETURN NULL;
END
$$;

DO $$
BEGIN
	IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = 'queuey_outbox_notify' AND tgrelid = 'queuey_outbox'::regclass) THEN
		CREATE CONSTRAINT TRIGGER queuey_outbox_notify AFTER INSERT ON queuey_outbox
			DEFERRABLE INITIALLY DEFERRED
			FOR EACH ROW EXECUTE FUNCTION queuey_outbox_notify();
	END IF;
END
$$;
