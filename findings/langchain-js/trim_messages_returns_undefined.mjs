// LangChain.js trimMessages returns [undefined] instead of the system message.
//
// Standalone: only @langchain/core. With includeSystem: true and startOn:
// "human" (the combination the docs and the docstring show), when no human
// message is left in the window — a long ToolLoop after one request, or a
// history of a system prompt and an assistant turn, even far under
// maxTokens — _lastMaxTokens lets startOn strip the system message too and
// then returns [reversed_[0], ...] = [undefined]. The next model call throws
// on it. (LangChain Python's trim_messages returns [SystemMessage] here.)
//
// Exit 10 (and what came back) while the bug is there; 11 once fixed; 2 (not
// run) unless the pinned release is what imports (findings/pinned.mjs).
import { library, verdict } from '../pinned.mjs';

// Exit 2 ("not run") unless the pinned release is what imports; then its module.
const [{ AIMessage, SystemMessage, trimMessages }] = await library(import.meta.url, (m) => import(m));

const messages = [new SystemMessage('You are the QA gate.'), new AIMessage('Checking the PR now.')];
const trimmed = await trimMessages(messages, {
  maxTokens: 1000, // nothing is over budget
  strategy: 'last',
  tokenCounter: (msgs) => msgs.length,
  includeSystem: true,
  startOn: 'human',
});
console.log('trimMessages returned:', trimmed.map((m) => (m === undefined ? 'undefined' : `${m.getType()}: ${m.content}`)));
verdict(trimmed.some((m) => m === undefined));
