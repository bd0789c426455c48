// A subject that keeps every message, with an estimate built from the
// package's floors: it claims only what keeping everything can hold, and
// ctxgate checks those claims (js/ci.sh runs it). A starting point for your
// own: replace `compact` with yours and claim more.
//
//     npx ctxgate check --subject 'node keep-all.mjs'
import { serve, toolCallsFloor, imageTokens } from 'ctxgate';

const text = (m) => (Array.isArray(m.content)
  ? m.content.filter((p) => p?.type === 'text').map((p) => p.text).join('')
  : typeof m.content === 'string' ? m.content : '');
const images = (m) => (Array.isArray(m.content) ? m.content.filter((p) => p?.type === 'image') : []);

/** ADR 0098's count: the text, the JSON of the tool calls, each image by its pixels (SPEC §3). */
function estimate(messages, config) {
  const perMessage = messages.map((m) => Math.ceil(Buffer.byteLength(text(m)) / config.bytesPerToken)
    + toolCallsFloor([m], config)
    + images(m).reduce((n, p) => n + imageTokens(p, config.wireFormat), 0));
  return { tokens: perMessage.reduce((a, b) => a + b, 0), perMessage };
}

serve({
  name: 'keep-all',
  version: '1.0.0',
  compact: (messages) => messages,
  estimate,
  invariants: [
    'tool-pairing', 'verbatim-suffix', 'order-preserved', 'pinned-kept', 'single-bounded-summary',
    'deterministic', 'idempotent', 'no-premature-compaction',
    'estimate-covers-tool-calls', 'estimate-covers-images', 'estimate-monotone',
  ],
});
