// Types of queuey.js: enqueue queuey jobs from Node.js for Go workers to
// run, in format 1 of queuey's wire format (docs/wire-format.md).

/** The content type of every job message: format 1. */
export const CONTENT_TYPE: 'application/vnd.queuey.envelope+msgpack';
/** Job headers whose names start with this are queuey's own. */
export const RESERVED_HEADER_PREFIX: 'queuey-';
/** The annotation's default max_attempts: what enqueue writes in the body. Workers run a job by their queue's max_attempts, whatever the body says. */
export const DEFAULT_MAX_ATTEMPTS: 5;
/** The annotation's default max_priority. */
export const DEFAULT_MAX_PRIORITY: 10;
/** The Go backend's default granularity, in milliseconds. */
export const DEFAULT_GRANULARITY_MS: 1000;

/** A job was not enqueued. */
export class QueueyError extends Error {}
/** The broker returned the publish: no queue took it (the queue does not exist: no worker declared it yet). */
export class UnroutableError extends QueueyError {}
/** The broker nacked the publish: it did not store the job. */
export class NackedError extends QueueyError {}
/** The job breaks the wire format's rules; nothing was published. */
export class InvalidJobError extends QueueyError {}
/** A body is not a format 1 envelope (decodeBody). */
export class InvalidEnvelopeError extends Error {}

/** A job as it travels: the envelope's fields and the msgpack payload. */
export interface Envelope {
  id: string;
  queue: string;
  /** The Go type of the job, package.Type. */
  kind: string;
  /** One msgpack value. */
  payload: Uint8Array;
  /** 1..2^31-1; 1 on enqueue. */
  attempt?: number;
  /** 1..2^31-1: the queue's max_attempts. */
  maxAttempts?: number;
  /** 0..255. */
  priority?: number;
  /** Unix nanoseconds; 0 for unknown. */
  enqueuedAtNs?: bigint | number;
  lastError?: string;
  headers?: Record<string, string> | null;
}

/** What enqueue takes; any other option is refused with InvalidJobError. */
export interface EnqueueOptions {
  /** 0..maxPriority. Default 0. */
  priority?: number;
  /** A unique job ID, at most 255 bytes; a new UUIDv7 when left out. */
  jobId?: string;
  /** String job headers, such as traceparent; none may start with "queuey-". */
  headers?: Record<string, string>;
  /** Milliseconds to hold the job before its first run, rounded up to granularityMs. */
  delayMs?: number;
  /** The queue's max_priority (its //queuey:queue annotation; 0 for no priorities). Default 10. A priority above it is refused. */
  maxPriority?: number;
  /** The queue's queue_type. Default "classic". */
  queueType?: 'classic' | 'quorum';
  /** The queue's delay mode: its annotation's delay, or the workers' rabbitmq.Options.Delay. Default defaultDelay(queueType): "ladder" for quorum, "queue" (hold queues) for classic, as Go's runtime.DefaultDelay. */
  delayMode?: 'queue' | 'ladder' | 'plugin';
  /** With delayMode "plugin": the workers' delay exchange. Default queue + ".delay". */
  delayExchange?: string;
  /** The workers' rabbitmq.Options.Granularity in ms. Default 1000. */
  granularityMs?: number;
}

/** What enqueue publishes on: an amqplib connection (a confirm channel is opened and kept for it) or a ConfirmChannel. */
export type Target =
  | { createConfirmChannel(): Promise<unknown> }
  | { waitForConfirms(): Promise<void> };

/**
 * Enqueue one job of kind (the Go type, "emails.SendEmail") onto queue and
 * resolve to its ID once the broker has confirmed it. payload's keys are
 * the Go struct's field names.
 *
 * Rejects with UnroutableError when the queue (or a hold queue, the delay
 * ladder, or the plugin's exchange) does not exist, NackedError when the broker refuses
 * the job, InvalidJobError (nothing published) for a job that breaks the
 * rules, and QueueyError when the channel closed before the confirm (the
 * job may or may not be stored: enqueue it again with the same jobId).
 */
export function enqueue(target: Target, queue: string, kind: string, payload: object, options?: EnqueueOptions): Promise<string>;

/** The body of env, byte for byte as the Go codec writes it. */
export function encodeBody(env: Envelope): Buffer;
/** The envelope a message carries, checked as a Go worker checks it. */
export function decodeBody(
  body: Uint8Array,
  properties: { contentType?: string; messageId?: string | Uint8Array; type?: string; expiration?: string },
): Required<Omit<Envelope, 'enqueuedAtNs'>> & { enqueuedAtNs: bigint };
/** payload as msgpack: a Date as a timestamp, a Buffer as bin, a bigint as a 64-bit integer. */
export function encodePayload(payload: object): Uint8Array;
/** The hold queue a delayed enqueue onto queue goes through, as the Go backend declares it. */
export function holdQueue(
  queue: string,
  delayMs: number,
  options?: { queueType?: 'classic' | 'quorum'; granularityMs?: number },
): { name: string; arguments: Record<string, string | number>; ttlMs: number };
/** The wait (ms) a quorum hold queue holds a delay of ttlMs for. */
export function quorumRung(ttlMs: number, granularityMs?: number): number;
/** N, the number of levels of the delay ladder at granularityMs (default 1000): 22 at 1000 ms, 31 at 1 ms. */
export function ladderLevels(granularityMs?: number): number;
/**
 * Where a delayed enqueue onto a ladder-mode queue (delay=ladder) is
 * published, as the Go backend publishes its waits: the wait (delayMs
 * rounded up to granularityMs, at least one), the exchange of the ladder
 * level of its highest set bit, and the routing key of its N bits, most
 * significant first, then queue. On a split ladder (split: a quorum ladder
 * on RabbitMQ 4.x, as ladderSplit says) the set bits of a job of priority
 * LADDER_HIGH_PRIORITY or more are "h". Throws InvalidJobError for a
 * negative delay, a wait over runtime.MaxDeferral, a name longer than
 * 255 - 2N bytes, or a split classic ladder.
 */
export function ladderWait(
  queue: string,
  delayMs: number,
  options?: { queueType?: 'classic' | 'quorum'; granularityMs?: number; priority?: number; split?: boolean },
): { exchange: string; routingKey: string; waitMs: number; levels: number };
/** The least priority a split ladder holds apart: 5. */
export const LADDER_HIGH_PRIORITY: number;
/**
 * Whether the delay ladder of queueType (default quorum) and granularityMs
 * on the broker is split, its workers having declared the level queues of
 * high priority (a quorum ladder on RabbitMQ 4.x): passive declares of
 * queues P.unrouted (declared after every level queue) and P.00.hi, each
 * on a channel of its own. The answer is kept for the channel's life once
 * the ladder is declared (P.unrouted exists, or P.00.hi does), and asked
 * again until then.
 */
export function ladderSplit(
  target: Target,
  options?: { queueType?: 'classic' | 'quorum'; granularityMs?: number },
): Promise<boolean>;
/** delayMs rounded up to the granularity, at least one, at most runtime.MaxDeferral. */
export function roundDelay(delayMs: number, granularityMs?: number): number;
/** The delay mode of a queue of queueType that names none, as Go's runtime.DefaultDelay: "ladder" for quorum, "queue" for classic. */
export function defaultDelay(queueType: 'classic' | 'quorum'): 'queue' | 'ladder';
/** A new job ID: a UUIDv7. */
export function newId(): string;
