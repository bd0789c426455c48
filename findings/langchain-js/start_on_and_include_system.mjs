// What LangChain.js trimMessages does that ctxgate's invariants flag, but its docs allow.
//
// Standalone: only @langchain/core, called as the docs show (strategy "last",
// includeSystem: true, startOn: "human"). docs/findings.md classifies these
// "outside the library's contract" — the JSDoc says startOn drops "every
// message before the first occurrence of this type", and includeSystem keeps
// "the SystemMessage if there is one at index 0" — the same as LangChain
// Python's trim_messages (ctxgate's README, LangChain findings 1 and 3):
//
// 1. no-premature-compaction: startOn applies although nothing is over
//    maxTokens: a ToolLoop with no human message comes back empty.
// 2. verbatim-suffix: over budget, the last iteration (an AI call and its
//    result) is dropped with everything else when no human message follows.
// 3. pinned-kept: a second leading system message is dropped.
//
// Exit 10 while all three still show; 11 if any changed; 2 (not run) unless
// the pinned release is what imports (findings/pinned.mjs).
import { library, verdict } from '../pinned.mjs';

// Exit 2 ("not run") unless the pinned release is what imports; then its module.
const [{ AIMessage, HumanMessage, SystemMessage, ToolMessage, trimMessages }] = await library(import.meta.url, (m) => import(m));

const opts = (maxTokens) => ({ maxTokens, strategy: 'last', tokenCounter: (m) => m.length, includeSystem: true, startOn: 'human' });
const show = (ms) => ms.map((m) => (m ? `${m.getType()}:${String(m.content).slice(0, 20)}` : 'undefined'));
const call = (id) => new AIMessage({ content: '', tool_calls: [{ id, name: 'read_file', args: { path: 'a.ts' }, type: 'tool_call' }] });
let seen = 0;

const loop = [call('c1'), new ToolMessage({ content: 'export {}', tool_call_id: 'c1' })];
const r1 = await trimMessages(loop, opts(100));
console.log('1. a tool iteration, 2 messages under maxTokens 100 ->', show(r1));
seen += r1.length === 0;

const over = [new HumanMessage('review it'), call('c1'), new ToolMessage({ content: 'x', tool_call_id: 'c1' }), call('c2'), new ToolMessage({ content: 'y', tool_call_id: 'c2' })];
const r2 = await trimMessages(over, opts(3));
console.log('2. 5 messages, maxTokens 3 ->', show(r2));
seen += !r2.some((m) => m && m.tool_call_id === 'c2');

const two = [new SystemMessage('You are the QA gate.'), new SystemMessage('Repository rules: never merge on red.'), new HumanMessage('go')];
const r3 = await trimMessages(two, opts(100));
console.log('3. two system messages under budget ->', show(r3));
seen += !r3.some((m) => m && m.content === 'Repository rules: never merge on red.');

console.log(`${seen} of 3 behaviours shown`);
verdict(seen === 3);
