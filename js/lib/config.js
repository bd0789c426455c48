// SPEC §2's configuration: the defaults of the fields a request or a caller
// leaves out. serve() hands a compactor the request's config over them;
// bodyBytes() and toolCallsFloor() read a partial config the same way.

/** SPEC §2's defaults. */
export const DEFAULTS = Object.freeze({
  contextWindow: 128000,
  threshold: 0.7,
  transportMaxBodyBytes: 8388608,
  bytesPerToken: 4,
  keepRecent: 2,
  summaryMaxBytes: 4096,
  wireFormat: 'engine',
  envelope: Object.freeze({}),
});

/** A config over the defaults (null or undefined: the defaults). */
export function withDefaults(config) {
  return { ...DEFAULTS, ...(config ?? {}) };
}
