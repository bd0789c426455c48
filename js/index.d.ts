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

/**
 * An invariant's name (SPEC §5), or an extension (docs/contract.md §5): `estimate-covers-text`
 * (judged by default on a subject that answers `estimate`), `estimate-covers-real-tokens`
 * (judged only when named) and `trims-when-due` (docs/protocol.md §8, "Message-count compactors").
 */
export type Invariant =
  | 'tool-pairing' | 'estimate-covers-tool-calls' | 'estimate-monotone' | 'body-under-ceiling'
  | 'no-premature-compaction' | 'progress' | 'verbatim-suffix' | 'order-preserved' | 'pinned-kept'
  | 'single-bounded-summary' | 'estimate-covers-images' | 'deterministic' | 'idempotent'
  | 'session-never-overflows' | 'estimate-covers-text' | 'estimate-covers-real-tokens'
  | 'trims-when-due';

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

/** An agent invariant's name (SPEC §9). */
export type AgentInvariant =
  | 'request-under-ceiling' | 'request-within-window' | 'recovers-after-refusal' | 'tool-pairing'
  | 'results-delivered' | 'pinned-kept' | 'order-preserved' | 'no-premature-compaction' | 'finishes';

/** One case ctxgate plays, handed to checkAgent's runCase: point the agent at it and give it the task. */
export interface AgentCase {
  /** The case's index (a failing case comes again: confirmed, then shrunk by re-running smaller scripts). */
  index: number;
  /** The endpoint, `http://127.0.0.1:PORT`. */
  url: string;
  /** OpenAI's base URL (`…/v1`): the OpenAI clients' and the Vercel AI SDK's `baseURL`. */
  baseUrl: string;
  openaiBaseUrl: string;
  /** Anthropic's base URL (no `/v1`): the Anthropic client's `baseURL`. */
  anthropicBaseUrl: string;
  /** A dummy key (`sk-ctxgate-…`): pass it, never your real one. */
  apiKey: string;
  /** The task. */
  prompt: string;
  /** A file holding the task. */
  promptFile: string;
  /** The case's workspace folder: the files the tools will be asked to read (by absolute path) are there. */
  workspace: string;
  /** Seconds the case may take; runCase is abandoned and `signal` aborted then. */
  deadlineSeconds: number;
  /** The variables an agent process would get (SPEC §9): for an agent that reads only its environment, or a tool that starts one. */
  env: Record<string, string>;
  /** Aborted at the case's deadline: give it to fetch and the SDKs (`abortSignal`, `signal`). */
  signal: AbortSignal;
}

export interface AgentOptions {
  /** The agent's settings: SPEC §2's fields plus `toolOutputMaxBytes` and `earlyTolerance`, or a JSON file's path. */
  config?: (Partial<Config> & { toolOutputMaxBytes?: number; earlyTolerance?: number }) | string;
  /** How many cases [20]. */
  cases?: number;
  /** The generator's seed [$CTXGATE_SEED, else random; always in the report]. */
  seed?: number | string;
  /** The agent invariants to judge [all nine]. */
  invariants?: AgentInvariant[] | AgentInvariant;
  /** Seconds one case may take [120]. */
  timeout?: number;
  /** Tools that read a file, `NAME:ARG[=TEMPLATE]` (docs/agent.md, "The tool mapping"). */
  tools?: string[] | string;
  /** Answer only this dialect. */
  dialect?: 'openai-chat' | 'openai-responses' | 'anthropic';
  /** Who answers a body over the ceiling with 413 ['express']. */
  gateway?: 'express' | 'nginx' | 'openai' | 'anthropic';
  /** A regex that tells a summary request. */
  summaryMatch?: string;
  /** Where shrunk failures are saved ['.ctxgate/agent-failures']. */
  save?: string;
  /** More `ctxgate agent` arguments. */
  args?: string[];
  cwd?: string;
  /** ctxgate's environment [process.env]. */
  env?: Record<string, string | undefined>;
  /** A ctxgate binary (default: binaryPath()). */
  binary?: string;
}

/** The agent's run of one case: its final output (or a Promise of it); what it throws fails that case. */
export type RunCase = (c: AgentCase) => unknown;

/** One shrunk failure of an agent invariant. */
export interface AgentFailure {
  invariant: AgentInvariant;
  case: number;
  detail: string;
  expected?: string | null;
  received?: string | null;
  shrunk: { from: { turns: number; calls: number; resultBytes: number }; to: { turns: number; calls: number; resultBytes: number }; runs: number };
  /** The saved fixture (absolute path), or null when it could not be saved. */
  fixture: string | null;
  replay: string | null;
}

/** What checkAgent found. */
export declare class AgentReport {
  exitCode: number | string;
  /** ctxgate's JSON report (SPEC §9). */
  json: Record<string, any>;
  /** ctxgate's human report. */
  text: string;
  command: string[];
  stderr: string;
  /** [case index, what runCase threw], for each run that threw. */
  errors: Array<[number, unknown]>;
  readonly ok: boolean;
  readonly seed: number;
  readonly verdicts: Record<AgentInvariant, { pass: number; fail: number; notApplicable: number }>;
  readonly failures: AgentFailure[];
  readonly flaky: Array<{ invariant: AgentInvariant; case: number; failedAgain: number; reruns: number; detail: string }>;
  readonly failingCases: Array<{ case: number; invariant: AgentInvariant; detail: string }>;
  readonly failedInvariants: AgentInvariant[];
  readonly fixtures: string[];
  failureMessage(): string;
  assertOk(): this;
}

/**
 * ctxgate plays the model for an agent that runs in this process (`ctxgate agent --driven`): `runCase` is awaited
 * on each case, one at a time. Resolves with the report when every checked invariant held and each was exercised;
 * rejects with AgentCheckFailed (its `report`) otherwise, AgentRunError when ctxgate ends without a report. The
 * ctxgate it starts never outlives it (nor this process); its case folders are removed however it ends.
 */
export declare function checkAgent(runCase: RunCase, options?: AgentOptions): Promise<AgentReport>;

/** Play agent fixtures again with the in-process agent; rejects with AgentCheckFailed unless every one held (with `expectFailures`: still failed). */
export declare function replayAgent(
  runCase: RunCase,
  paths: string | string[],
  options?: Omit<AgentOptions, 'config' | 'cases' | 'seed' | 'invariants' | 'save'> & { expectFailures?: boolean },
): Promise<{ exitCode: number | string; ok: boolean; text: string; errors: Array<[number, unknown]> }>;

/** What checkAgent and replayAgent throw when the agent fails its checks: the message holds each failure, its fixture and how to replay it. */
export declare class AgentCheckFailed extends Error {
  report: AgentReport;
  exitCode: number | string;
  fixtures: string[];
}

/** ctxgate could not run the check, or ended without a report (bad usage, a refused config): the message holds what it said and the command. */
export declare class AgentRunError extends Error {
  exitCode?: number | string;
  stderr?: string;
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
