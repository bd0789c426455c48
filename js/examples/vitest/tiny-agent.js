// A stand-in for your agent (a Vercel AI SDK, OpenAI Agents SDK or LangGraph
// agent built in the test): a ToolLoop over OpenAI Chat Completions with one
// tool, `read_file`, using fetch and nothing else, that compacts its history
// as ADR 0098 says — the estimate checked before every request, a summary
// asked of the model, the system prompt, the task and the last turn kept, a
// 413 or a context-length error answered by compacting (and a 413 teaching
// it the gateway's limit). agent.test.js checks it with checkAgent; the
// package's own tests (js/test/agent.test.js) too.
//
// `bug` plants one of the 2026 bugs of this class:
//   'drops-system-prompt'  the system prompt is lost at compaction (pinned-kept)
//   'resend-on-413'        a 413 is answered by sending the same body again
//                          (recovers-after-refusal; QwenLM/qwen-code#10380)
import { readFileSync } from 'node:fs';

/** What the agent was configured with (its own settings, as it ships). */
export const OWN_LIMITS = { window: 32000, threshold: 0.7, ceiling: 100 * 1024, toolOutputMax: 16 * 1024 };
/** ADR 0098's production case: a 128k window and no ceiling of its own (10 MB), behind an Express gateway's 100 KB. */
export const NO_CEILING = { ...OWN_LIMITS, window: 128000, ceiling: 10_000_000 };

/** What ctxgate is told: the limits the agent really meets (SPEC §2's fields, and its own cut of a long tool result). */
export function config(limits, ceiling = limits.ceiling) {
  return {
    contextWindow: limits.window, threshold: limits.threshold,
    transportMaxBodyBytes: ceiling, toolOutputMaxBytes: limits.toolOutputMax,
  };
}

/**
 * Two deployments. With its own limits right, every request must be under
 * them. Behind a gateway whose limit it was never told, the agent meets a
 * 413: what is judged then is everything else — above all that it recovers
 * (`recovers-after-refusal`) and finishes.
 */
export const DEPLOYMENTS = {
  'own-limits': { limits: OWN_LIMITS, config: config(OWN_LIMITS) },
  'behind-express-100kb': {
    limits: NO_CEILING,
    config: config(NO_CEILING, 100 * 1024),
    invariants: ['request-within-window', 'recovers-after-refusal', 'tool-pairing', 'results-delivered',
      'pinned-kept', 'order-preserved', 'no-premature-compaction', 'finishes'],
  },
};

const SYSTEM = 'You are a careful coding agent. Read the files the task needs with read_file, then answer.';
const SUMMARY_ASK = 'Summarize the conversation so far for a handoff.';
const TOOLS = [{
  type: 'function',
  function: {
    name: 'read_file', description: 'Read a text file and return its content.',
    parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  },
}];

/** The model (or a gateway before it) refused the request: 413, or over the window. */
class Refused extends Error {
  constructor(message, tooLargeBytes = null) {
    super(message);
    this.name = 'Refused';
    this.tooLargeBytes = tooLargeBytes; // a 413's body size: the ceiling is below it
  }
}

/** Even the smallest request this agent can make does not fit. */
export class GaveUp extends Error {
  constructor(message) {
    super(message);
    this.name = 'GaveUp';
  }
}

const bytes = (text) => Buffer.byteLength(text, 'utf8');
/** The first n UTF-16 units of text, never half a surrogate pair. */
const head = (text, n) => (/[\uD800-\uDBFF]/.test(text.charAt(n - 1)) ? text.slice(0, n - 1) : text.slice(0, n));

export class TinyAgent {
  constructor({ baseUrl, apiKey, limits = OWN_LIMITS, bug = null, signal }) {
    this.url = `${baseUrl.replace(/\/+$/, '')}/chat/completions`;
    this.apiKey = apiKey;
    this.window = limits.window;
    this.ceiling = limits.ceiling;
    this.threshold = limits.threshold;
    this.toolOutputMax = limits.toolOutputMax;
    this.bug = bug;
    this.signal = signal;
  }

  get trigger() {
    return this.threshold * Math.min(this.window, Math.floor(this.ceiling / 4));
  }

  // --- the model, over HTTP ---

  body(messages, tools = true, maxTokens = 1024) {
    return JSON.stringify({ model: 'test-model', messages, max_tokens: maxTokens, ...(tools ? { tools: TOOLS } : {}) });
  }

  /** The model's answer: its message (content, tool_calls). */
  async ask(messages, tools = true, maxTokens = 1024) {
    const body = this.body(messages, tools, maxTokens);
    const response = await fetch(this.url, {
      method: 'POST', body, signal: this.signal,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${this.apiKey}` },
    });
    const text = await response.text();
    if (response.status === 413) throw new Refused(`413: ${head(text, 200)}`, bytes(body));
    if (response.status === 400 && text.includes('context')) throw new Refused(`400: ${head(text, 200)}`);
    if (!response.ok) throw new Error(`HTTP ${response.status}: ${head(text, 200)}`);
    return JSON.parse(text).choices[0].message;
  }

  // --- the context ---

  estimate(messages) {
    return messages.reduce((n, m) => n + bytes(JSON.stringify(m)), 0) / 4;
  }

  fits(messages) {
    return bytes(this.body(messages)) <= this.ceiling && this.estimate(messages) <= this.window;
  }

  due(messages) {
    return this.estimate(messages) > this.trigger || bytes(this.body(messages)) > this.ceiling * 0.9;
  }

  /** The system prompt and the task, a summary of the middle, the last turn whole. */
  async compact(messages) {
    const [system, task] = messages;
    let last = messages.findLastIndex((m) => m.tool_calls);
    if (last < 0) last = messages.length;
    const middle = messages.slice(2, last);
    let summary = null;
    if (middle.length) {
      const ask = [system]; // what the summariser is sent is bounded by the ceiling too
      for (const m of middle) {
        const piece = {
          role: m.role === 'assistant' ? 'assistant' : 'user',
          content: head(m.content || JSON.stringify(m.tool_calls ?? null), 4000),
        };
        if (bytes(this.body([...ask, piece], false)) > Math.floor(this.ceiling / 2)) break;
        ask.push(piece);
      }
      const end = ask[ask.length - 1];
      if (end.role === 'user') ask[ask.length - 1] = { role: 'user', content: `${end.content}\n\n${SUMMARY_ASK}` };
      else ask.push({ role: 'user', content: SUMMARY_ASK });
      try {
        summary = head((await this.ask(ask, false, 256)).content || '', 2000);
      } catch (e) {
        if (!(e instanceof Refused)) throw e;
        summary = '(earlier turns dropped)';
      }
    }
    const pinned = this.bug === 'drops-system-prompt' ? [task] : [system, task];
    const note = summary ? [{ role: 'user', content: `Earlier work, summarised: ${summary}` }] : [];
    let recent = messages.slice(last);
    if (recent.length && !this.fits([...pinned, ...note, ...recent])) {
      // The model's own prose beside its calls can go; the calls and their results stay.
      recent = [{ ...recent[0], content: head(recent[0].content || '', 1000) }, ...recent.slice(1)];
    }
    return [...pinned, ...note, ...recent];
  }

  // --- the loop ---

  readFile(path) {
    let text;
    try {
      text = readFileSync(path, 'utf8');
    } catch (e) {
      return `error: ${e.message}`;
    }
    const cut = Buffer.from(text, 'utf8').subarray(0, this.toolOutputMax);
    return new TextDecoder('utf-8', { fatal: false }).decode(cut).replace(/\uFFFD$/, '');
  }

  async run(task) {
    let messages = [{ role: 'system', content: SYSTEM }, { role: 'user', content: task }];
    for (let turn = 0; turn < 200; turn++) {
      if (this.due(messages)) {
        messages = await this.compact(messages);
        if (!this.fits(messages)) throw new GaveUp('the last turn alone does not fit');
      }
      let answer = null;
      for (let tries = 0; tries < 5 && answer === null; tries++) {
        try {
          answer = await this.ask(messages);
        } catch (e) {
          if (!(e instanceof Refused)) throw e;
          if (this.bug !== 'resend-on-413') {
            // A gateway's limit below ours: learn it.
            if (e.tooLargeBytes) this.ceiling = Math.min(this.ceiling, Math.floor((e.tooLargeBytes * 9) / 10));
            messages = await this.compact(messages);
          }
        }
      }
      if (answer === null) throw new GaveUp('the request does not fit, even compacted');
      const calls = answer.tool_calls ?? [];
      if (!calls.length) return answer.content ?? '';
      messages.push({ role: 'assistant', content: answer.content ?? null, tool_calls: calls });
      for (const call of calls) {
        const { path = '' } = JSON.parse(call.function.arguments || '{}');
        messages.push({ role: 'tool', tool_call_id: call.id, content: this.readFile(path) });
      }
    }
    throw new GaveUp('too many turns');
  }
}

/** One case: the agent pointed at ctxgate, given the task; its final answer. */
export function runCase(c, limits = OWN_LIMITS, bug = null) {
  return new TinyAgent({ baseUrl: c.baseUrl, apiKey: c.apiKey, limits, bug, signal: c.signal }).run(c.prompt);
}
