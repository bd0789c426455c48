#!/usr/bin/env python3
"""An agent that sends ctxgate's endpoint what no real client should: a body
that is not JSON, a JSON array, a request of no dialect, an unknown path,
headers with terminal escapes, a body cut short, a stream of bytes that is
not UTF-8, malformed chunks, a path with a query — then plays its script properly, through tests/agents/toolloop.py
(openai-chat). The endpoint must answer each and go on; the judges must
judge what came.

Standard library only.
"""

import http.client
import os
import socket
import sys
import urllib.parse

here = os.path.dirname(os.path.abspath(__file__))
url = urllib.parse.urlparse(os.environ["CTXGATE_AGENT_URL"])


def request(method, path, body=b"", headers=None):
    c = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    c.request(method, path, body=body, headers=headers or {})
    r = c.getresponse()
    r.read()
    c.close()
    return r.status


statuses = [
    request("POST", "/v1/chat/completions", b"{not json"),
    request("POST", "/v1/chat/completions", b"[1, 2, 3]"),
    request("POST", "/v1/messages", b'{"messages": "no"}'),
    request("POST", "/v1/responses", b"\xff\xfe\x00 not utf-8"),
    request("GET", "/v1/nothing/here"),
    request("GET", "/v1/models"),
    request("POST", "/v1/chat/completions", b'{"messages": []}',
            {"x-evil": "\x1b]0;title\x07", "authorization": "Bearer sk-real-looking"}),
    request("POST", "/v1/chat/completions", b'{"messages": [], "model": "\\u001b]0;t\\u0007"}',
            {"x-note": "caf\u00e9 [link](http://x) ::error::forged", "authorization": "Bearer sk-real"}),
]
# A body cut short: the connection closes before the declared length.
s = socket.create_connection((url.hostname, url.port), timeout=10)
s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{\"mess")
s.close()
# Malformed chunks (a size that is not hex) and a chunk the connection
# ends inside: 400s, not bodies over the ceiling.
def raw_status(data, close=False):
    s = socket.create_connection((url.hostname, url.port), timeout=10)
    s.sendall(data)
    if close:
        s.shutdown(socket.SHUT_WR)
    got = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        got += b
    s.close()
    return int(got.split(b" ")[1])


chunked = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n"
statuses.append(raw_status(chunked + b"zz\r\nhello\r\n0\r\n\r\n"))
statuses.append(raw_status(chunked + b"1000\r\n{\"mess", close=True))
# A query after the path (Azure's api-version) is the same endpoint.
statuses.append(request("POST", "/v1/chat/completions?api-version=2024-10-21",
                        b'{"messages": [{"role": "user", "content": "hi"}]}'))
# The seventh: a header with control characters is refused by the HTTP layer.
expected = [400, 400, 400, 400, 404, 200, 400, 200, 400, 400, 200]
if statuses != expected:
    print(f"hostile agent: statuses {statuses}, expected {expected}", file=sys.stderr)
    sys.exit(4)
os.execv(sys.executable, [sys.executable, os.path.join(here, "toolloop.py"), *sys.argv[1:]])
