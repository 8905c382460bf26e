-- The outbox's schema: Migrate applies this file, whole, in one implicit
-- transaction; every statement is idempotent, and an advisory lock keeps
-- two Migrate calls from racing. It creates what is missing and brings an
-- outbox made by an earlier version of this file up to this one. Nothing
-- else of queuey is written to the application's database.
--
-- On tables already up to date it changes nothing and takes no lock on
-- them that an INSERT, or the relay, waits for: every statement that
-- would lock a table (ALTER TABLE, CREATE INDEX, CREATE TRIGGER, and
-- CREATE OR REPLACE FUNCTION, which writes the catalog) runs only when the
-- catalog shows that it is needed. One that runs waits at most
-- lock_timeout for its lock, then the whole file fails and changes
-- nothing: while it waits, every transaction that inserts into the table
-- waits behind it.
SELECT pg_advisory_xact_lock(7157431870552711234);
SET LOCAL lock_timeout = '3s';

-- queuey_outbox holds jobs enqueued in a transaction (outbox.Producer) that
-- the relay has not yet published. A row is visible to the relay once its
-- transaction commits, and never before. Rows are keyed by seq: a job's ID
-- is a label its producer chose, carried unchanged, and two rows may share
-- one.
CREATE TABLE IF NOT EXISTS queuey_outbox (
	seq            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, -- insertion order, the relay's order
	id             text        NOT NULL,        -- the job's ID, kept on the broker
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
	delay_exchange text,                        -- for a delayed job: the plugin's exchange, if named
	inserted_at    timestamptz NOT NULL DEFAULT statement_timestamp(), -- when the row was inserted (the database's clock)
	attempts       integer     NOT NULL DEFAULT 0, -- publishes the relay tried and the backend refused for now
	failing_since  timestamptz,                 -- the first of those; NULL while none failed
	retry_at       timestamptz,                 -- the relay tries again from then; NULL: as soon as it can
	last_error     text,                        -- why the last try failed
	CONSTRAINT queuey_outbox_id_rule CHECK (octet_length(id) BETWEEN 1 AND 255),
	CONSTRAINT queuey_outbox_priority_rule CHECK (priority BETWEEN 0 AND 255),
	CONSTRAINT queuey_outbox_max_attempts_rule CHECK (max_attempts BETWEEN 1 AND 1000),
	CONSTRAINT queuey_outbox_enqueued_at_rule CHECK (isfinite(enqueued_at)),
	CONSTRAINT queuey_outbox_due_at_rule CHECK (isfinite(due_at))
);

-- An outbox made by an earlier version of this file: the columns the relay
-- keeps its tries in (added without rewriting the table), and the rules,
-- which hold for new rows (NOT VALID: rows already there are not checked,
-- and the relay moves aside any it cannot publish). Rows already there
-- get inserted_at -infinity, "before inserted_at existed" (a constant
-- default: nothing is rewritten or backfilled); ReadStats takes their
-- age from enqueued_at.
DO $$
DECLARE
	c record;
BEGIN
	IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'queuey_outbox'::regclass AND attname = 'inserted_at' AND NOT attisdropped) THEN
		ALTER TABLE queuey_outbox ADD COLUMN inserted_at timestamptz NOT NULL DEFAULT '-infinity';
		ALTER TABLE queuey_outbox ALTER COLUMN inserted_at SET DEFAULT statement_timestamp();
	END IF;
	FOR c IN
		SELECT * FROM (VALUES
			('attempts', 'integer NOT NULL DEFAULT 0'),
			('failing_since', 'timestamptz'),
			('retry_at', 'timestamptz'),
			('last_error', 'text')
		) AS cols (name, def)
		WHERE NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'queuey_outbox'::regclass AND attname = cols.name AND NOT attisdropped)
	LOOP
		EXECUTE format('ALTER TABLE queuey_outbox ADD COLUMN %I %s', c.name, c.def);
	END LOOP;
	-- The job's ID was once unique: a second enqueue with an ID whose first
	-- row was not yet relayed aborted the application's transaction.
	FOR c IN
		SELECT con.conname FROM pg_constraint con
		JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = ANY (con.conkey)
		WHERE con.conrelid = 'queuey_outbox'::regclass AND con.contype = 'u' AND a.attname = 'id'
	LOOP
		EXECUTE format('ALTER TABLE queuey_outbox DROP CONSTRAINT %I', c.conname);
	END LOOP;
	FOR c IN
		SELECT * FROM (VALUES
			('queuey_outbox_id_rule', 'octet_length(id) BETWEEN 1 AND 255'),
			('queuey_outbox_priority_rule', 'priority BETWEEN 0 AND 255'),
			('queuey_outbox_max_attempts_rule', 'max_attempts BETWEEN 1 AND 1000'),
			('queuey_outbox_enqueued_at_rule', 'isfinite(enqueued_at)'),
			('queuey_outbox_due_at_rule', 'isfinite(due_at)')
		) AS rules (name, rule)
		WHERE NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conrelid = 'queuey_outbox'::regclass AND conname = rules.name)
	LOOP
		EXECUTE format('ALTER TABLE queuey_outbox ADD CONSTRAINT %I CHECK (%s) NOT VALID', c.name, c.rule);
	END LOOP;
END
$$;

-- The relay takes rows it has not tried yet in insertion order, and rows
-- it tries again by when they are due, each through an index of its own,
-- so that rows waiting for another try never slow the others.
-- (CREATE INDEX IF NOT EXISTS would lock the table before it looks.)
DO $$
BEGIN
	IF NOT EXISTS (SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = 'queuey_outbox'::regclass AND c.relname = 'queuey_outbox_ready') THEN
		CREATE INDEX IF NOT EXISTS queuey_outbox_ready ON queuey_outbox (seq) WHERE retry_at IS NULL;
	END IF;
	IF NOT EXISTS (SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = 'queuey_outbox'::regclass AND c.relname = 'queuey_outbox_retry') THEN
		CREATE INDEX IF NOT EXISTS queuey_outbox_retry ON queuey_outbox (retry_at) WHERE retry_at IS NOT NULL;
	END IF;
END
$$;

-- queuey_outbox_dead holds rows the relay cannot publish (a queue that
-- still does not exist after the relay's grace, a job too large, a row
-- that breaks the rules), with the reason; the relay moves them here so
-- that they never hold back the rows behind them. queuey outbox dead retry
-- puts them back.
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
	reason         text        NOT NULL,               -- why the relay could not publish the job
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
-- "commit" shared, and notifies only when it can take "busy" itself,
-- which it lets go at once; a relay going idle drops "busy", then tries
-- "commit" until no producer that skipped holds it, relaying meanwhile,
-- and looks once more. No lock is waited for without a bound: a
-- transaction that makes the trigger run early (SET CONSTRAINTS ALL
-- IMMEDIATE) holds "commit" until it ends, which holds back no other
-- transaction and no relay, and delays its own jobs only.
-- The function is replaced only when its text differs: a replacement
-- writes the catalog and makes every session plan it again.
DO $$
DECLARE
	body text := $body$
BEGIN
	IF current_setting('queuey.outbox_notify_done', true) = 'on' THEN
		RETURN NULL;
	END IF;
	PERFORM set_config('queuey.outbox_notify_done', 'on', true);
	PERFORM pg_advisory_xact_lock_shared((1364541184::bigint << 32) | TG_RELID::bigint); -- "commit"
	-- "busy", taken and let go in one expression, so no interrupt can
	-- come between and leave it held by the session.
	IF (CASE WHEN pg_try_advisory_lock((1364541185::bigint << 32) | TG_RELID::bigint)
		THEN pg_advisory_unlock((1364541185::bigint << 32) | TG_RELID::bigint) ELSE false END) THEN
		PERFORM pg_notify('queuey_outbox', '');
	END IF;
	RETURN NULL;
END
$body$;
BEGIN
	IF NOT EXISTS (SELECT 1 FROM pg_proc WHERE oid = to_regprocedure('queuey_outbox_notify()') AND prosrc = body) THEN
		EXECUTE format('CREATE OR REPLACE FUNCTION queuey_outbox_notify() RETURNS trigger LANGUAGE plpgsql AS %L', body);
	END IF;
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
