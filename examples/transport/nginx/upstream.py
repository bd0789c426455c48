"""The tiny upstream behind the nginx example: reads the whole JSON body
nginx forwards, answers 200 with the number of messages. Listens on
127.0.0.1 on a port the kernel picks and writes that port to argv[1]."""
import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        try:
            messages = len(json.loads(body).get("messages", []))
            status, answer = 200, {"ok": True, "messages": messages}
        except (ValueError, AttributeError, TypeError) as e:
            status, answer = 400, {"ok": False, "error": str(e)}
        out = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(f"{server.server_address[1]}\n")
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
server.serve_forever()
