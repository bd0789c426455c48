// Types of the ctxgate npm package (the code is plain ESM JavaScript: index.js, lib/).

/** The three wire formats (SPEC §1). */
export type WireFormat = 'engine' | 'openai' | 'anthropic';

/** An engine content part (SPEC §1.4): text, an inline or remote image, or any other part, kept as it is. */
export type Part =
  | { type: 'text'; text: string; [k: string]: unknown }
  | { type: 'image'; mediaType: string; data: string; [k: string]: unknown }
  | { type: 'image'; url: string; [k: string]: unknown }
  | { type: string; [k: string]: unknown };

/** One tool call of an assistant message, in the engine format. */
export interface ToolCall {
  id: string;
  name: string;
  arguments: unknown;
  [k: string]: unknown;
}

/** One message in the engine format (SPEC §1.1). Fields ctxgate does not name are kept and count in the body. */
export interface Message {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content?: string | Part[] | null;
  toolCalls?: ToolCall[];
  toolCallId?: string;
  pinned?: boolean;
  [k: string]: unknown;
}

/** SPEC §2, every field present (a request's config over the defaults). */
export interface Config {
  contextWindow: number;
  threshold: number;
  transportMaxBodyBytes: number;
  bytesPerToken: number;
  keepRecent: number;
  summaryMaxBytes: number;
  wireFormat: WireFormat;
  envelope: Record<string, unknown>;
}

/** SPEC §2's defaults. */
export declare const DEFAULTS: Readonly<Config>;

/** An invariant's name (SPEC §5). */
export type Invariant =
  | 'tool-pairing' | 'estimate-covers-tool-calls' | 'estimate-monotone' | 'body-under-ceiling'
  | 'no-premature-compaction' | 'progress' | 'verbatim-suffix' | 'order-preserved' | 'pinned-kept'
  | 'single-bounded-summary' | 'estimate-covers-images' | 'deterministic' | 'idempotent'
  | 'session-never-overflows';

/** An estimate answer: the total, and optionally one figure per message. */
export interface Estimate {
  tokens: number;
  perMessage?: number[];
}

export interface ServeOptions {
  /** The compactor: engine messages in, engine messages out (or a Promise of them). Throw CannotFit or InvalidInput to answer with those kinds. */
  compact: (messages: Message[], config: Config) => Message[] | Promise<Message[]>;
  /** Optional: the compactor's own token count ({tokens, perMessage?}, or the count alone). */
  estimate?: (messages: Message[], config: Config) => Estimate | number | Promise<Estimate | number>;
  name: string;
  version: string;
  /** The invariants it claims (default: all that apply to its ops). */
  invariants?: Invariant[];
  /** The wire formats whose body it measures (default: all three). */
  wireFormats?: WireFormat[];
  /** false: it takes text content only, no parts or images (default: true). */
  contentParts?: boolean;
}

/**
 * Speak the subject protocol v1 (SPEC §6) on stdin/stdout until stdin closes; resolves then.
 * Every request line gets one answer line ctxgate can read, whatever it held and whatever the
 * compactor threw or returned: a line that is not a request is answered `invalid_input`, a throw
 * other than CannotFit and InvalidInput, or an answer that is not JSON data (NaN, a lone surrogate,
 * a BigInt, a cycle, nesting 128 deep), `library_error`, naming the cause.
 */
export declare function serve(
  options: ServeOptions,
  io?: {
    input?: { on(event: string, listener: (...args: any[]) => void): unknown };
    output?: { write(chunk: string): unknown };
    /** The longest request line read, in bytes (default: the longest string JavaScript holds); a longer one is skipped unread and answered `invalid_input`. */
    maxLineBytes?: number;
  },
): Promise<void>;

/** Thrown by compact to answer `cannot_fit`. */
export declare class CannotFit extends Error {}
/** Thrown for a history the compactor cannot represent (answered `invalid_input`). */
export declare class InvalidInput extends Error {}

/**
 * A value that is not JSON data as ctxgate reads it (thrown by bodyBytes, bodyMeterFor's meter and
 * toolCallsFloor): a string or a key holding a lone surrogate, NaN or ±Infinity, arrays and objects
 * nested 128 deep (a message counts as depth 2), or what JSON.stringify would change (a BigInt,
 * undefined in an array, a function, a symbol, a Map, a Set, an unawaited Promise).
 */
export declare class NotJson extends TypeError {
  /** Where: `messages[2].content`, `config.envelope.temperature`. */
  path: string;
  /** What is wrong there. */
  problem: string;
}

/** The exact size in bytes of the request body carrying `messages` in `config.wireFormat` (SPEC §2). Fields left out of config take their defaults. Throws NotJson for a body ctxgate refuses. */
export declare function bodyBytes(messages: Message[], config?: Partial<Config>): number;

/** bodyBytes for many histories under one config; faster when the same message objects come again. */
export declare function bodyMeterFor(config?: Partial<Config>): (messages: Message[]) => number;

/** Σ over messages of ceil(bytes(JSON of toolCalls) / bytesPerToken): the floor of `estimate-covers-tool-calls` (SPEC §5). */
export declare function toolCallsFloor(messages: Message[], config?: Partial<Config>): number;

/** An image part's tokens in a wire format, by its pixels (SPEC §3): the floor of `estimate-covers-images`. */
export declare function imageTokens(part: Part, format: WireFormat): number;

/** The ctxgate binary for this machine: $CTXGATE_BINARY, else the installed @ctxgate/<platform> package's (which must be of this package's version). */
export declare function binaryPath(options?: { env?: Record<string, string | undefined> }): string;

/** Thrown by binaryPath when no binary fits this machine; the message names the platform and the package. */
export declare class BinaryNotFound extends Error {}

/** Thrown by binaryPath when the installed @ctxgate/<platform> package is of another version than this package; the message names both. */
export declare class VersionSkew extends Error {}

export interface CheckOptions {
  /** The subject's command: one string (split as a POSIX shell splits it) or its words. */
  subject: string | string[];
  /** How many generated cases [300]. */
  cases?: number;
  seed?: number | string;
  invariants?: Invariant[] | Invariant;
  /** The user's config (SPEC §2), or the path of a JSON file. */
  config?: Partial<Config> | string;
  /** Generator settings (`ctxgate gen --print-gen-config`), or the path of a JSON file. */
  genConfig?: Record<string, unknown> | string;
  /** Where shrunk fixtures are saved ['.ctxgate/failures']. */
  save?: string;
  /** More `ctxgate check` arguments. */
  args?: string[];
  cwd?: string;
  env?: Record<string, string | undefined>;
  /** A ctxgate binary (default: binaryPath()). */
  binary?: string;
}

/**
 * Run `ctxgate check` against a subject; resolves when every checked invariant held, throws CheckFailed otherwise.
 * Throws TypeError for a `config` or `genConfig` object that is not JSON data. SIGTERM, SIGINT or SIGHUP to this
 * process stop the ctxgate it runs (and its subjects); its scratch folder is removed however it ends.
 */
export declare function check(options: CheckOptions): Promise<{ output: string }>;

/** A failure or fault found by check: the message holds each failure, its fixture and its replay line. */
export declare class CheckFailed extends Error {
  /** ctxgate's whole stdout and stderr. */
  output: string;
  /** The fixture files saved for the failures and faults (SPEC §7): absolute paths, read from ctxgate's JSON report. */
  fixtures: string[];
  /** The `ctxgate replay …` lines, as ctxgate printed them. */
  replays: string[];
  /** ctxgate's exit code, or `signal NAME` when a signal ended it. */
  exitCode: number | string;
}

export interface RoundTripOptions {
  /** How many generated cases [200]. */
  cases?: number;
  /** The generator's seed [0]. */
  seed?: number | string;
  /** The cases a subject whose hello says `"contentParts": false` is sent: no content parts, no images. */
  textOnly?: boolean;
  /** Also numbers stock JSON libraries re-spell or round (`1.50`, 2^64), as a subject saying `"numbers": "exact"` is sent. JSON.parse reads them as doubles on both sides. */
  exactNumbers?: boolean;
  /** The path of a config JSON file (SPEC §2): every case under it. */
  config?: string;
  /** The path of a generator settings JSON file (`ctxgate gen --print-gen-config`). */
  genConfig?: string;
  /** A ctxgate binary (default: binaryPath()). */
  binary?: string;
  env?: Record<string, string | undefined>;
}

/**
 * Run `ctxgate gen`'s cases through `serialise(await parse(messages))` and resolve with how many were checked,
 * each equal by value to what was generated (SPEC §5: numbers by value, object members in any order, a member
 * left out is not a member set to null). `parse` gets a copy of its own of each case's engine messages;
 * `serialise` returns engine messages, as an array or as JSON text. Rejects with RoundTripMismatch at the first
 * difference (its path, both values, the case and the `ctxgate gen` command that prints it), or when parse or
 * serialise throws.
 */
export declare function roundTrip<T>(
  parse: (messages: Message[]) => T | Promise<T>,
  serialise: (own: T) => Message[] | string | Uint8Array | Promise<Message[] | string | Uint8Array>,
  options?: RoundTripOptions,
): Promise<number>;

/** What roundTrip throws: the message names the case, the path and both values. */
export declare class RoundTripMismatch extends Error {
  /** The index of the case in `ctxgate gen`'s output. */
  caseIndex: number | null;
  /** Where the values differ: `messages[3].content[0].text` (null when parse or serialise threw). */
  path: string | null;
  /** The `ctxgate gen …` command that prints the cases again. */
  command: string | null;
}

/** null when `got` equals `expected` as JSON values (SPEC §5), else the first difference: its path under `root` ['messages'] and what it is. */
export declare function firstDifference(expected: unknown, got: unknown, root?: string): { path: string; problem: string } | null;
