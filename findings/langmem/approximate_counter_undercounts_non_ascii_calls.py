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

Exit 10 (and the numbers) while the bug is there; 11 once fixed; 2 (not run)
unless the pinned release is what imports (findings/pinned.py).
"""
import json
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pinned import library, verdict  # noqa: E402  (findings/pinned.py)

library()  # exit 2, "not run", unless the pinned release is what imports

from langchain_core.messages import AIMessage  # noqa: E402
from langchain_core.messages.utils import count_tokens_approximately  # noqa: E402

text = "修复请求体过大 413 错误 🐛📦🦀 " * 12
call = {"id": "call_2", "name": "edit_file", "args": {"path": "src/limits.ts", "newText": text}, "type": "tool_call"}
msg = AIMessage(content="", tool_calls=[call])
counted = count_tokens_approximately([msg], chars_per_token=4)
wire = json.dumps([{"id": call["id"], "name": call["name"], "arguments": call["args"]}], ensure_ascii=False,
                  separators=(",", ":")).encode()
floor = math.ceil(len(wire) / 4)
print(f"count_tokens_approximately (langmem's default counter, 4 per token): {counted} tokens for the message")
print(f"the call's JSON is {len(wire)} bytes: {floor} tokens at 4 bytes a token")
verdict(counted < floor)
