"""langmem's default token_counter counts characters of tool calls, not bytes: non-ASCII arguments are undercounted.

Standalone: only langmem and the langchain-core it runs on. summarize_messages'
default token_counter is langchain-core's count_tokens_approximately, which
adds len(repr(tool_calls)) / chars_per_token: characters of Python's repr,
not bytes of the JSON that goes on the wire. An edit_file call whose
arguments are emoji and CJK text (a code comment, a commit message) is 4 bytes
a character in UTF-8 and 1 to the counter, so the estimate falls below the
serialised call itself — ADR 0098's first defect, in another form. langmem's
trigger (max_tokens_before_summary) is then reached late. (ctxgate's README
showed the same counter under LangChain's trim_messages, "finding 4".)

Exit 1 (and the numbers) while the bug is there; exit 0 once fixed.
"""
import json
import math

from langchain_core.messages import AIMessage
from langchain_core.messages.utils import count_tokens_approximately

text = "修复请求体过大 413 错误 🐛📦🦀 " * 12
call = {"id": "call_2", "name": "edit_file", "args": {"path": "src/limits.ts", "newText": text}, "type": "tool_call"}
msg = AIMessage(content="", tool_calls=[call])
counted = count_tokens_approximately([msg], chars_per_token=4)
wire = json.dumps([{"id": call["id"], "name": call["name"], "arguments": call["args"]}], ensure_ascii=False,
                  separators=(",", ":")).encode()
floor = math.ceil(len(wire) / 4)
print(f"count_tokens_approximately (langmem's default counter, 4 per token): {counted} tokens for the message")
print(f"the call's JSON is {len(wire)} bytes: {floor} tokens at 4 bytes a token")
raise SystemExit(1 if counted < floor else 0)
