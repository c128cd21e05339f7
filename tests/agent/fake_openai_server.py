#!/usr/bin/env python3
"""A scripted OpenAI-compatible Chat Completions server (stdlib only).

Serves POST /v1/chat/completions from a list of replies, in order, and logs
each request body to --log (JSON lines). After the list is exhausted it answers
a plain text "done" reply. GET /v1/models answers one model. Used to drive
`kopt optimize --strategy agent` on the GPU machine, which has no network.

Usage: fake_openai_server.py --script replies.json --port-file FILE [--log FILE]
The script is a JSON array of chat.completion objects.
"""
import argparse
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def text_reply(text, n):
    return {"id": f"chatcmpl-{n}", "object": "chat.completion", "created": 0, "model": "fake-model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105}}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--script", required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log")
    args = ap.parse_args()
    replies = json.load(open(args.script))
    lock = threading.Lock()
    state = {"n": 0}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def send_json(self, obj, code=200):
            body = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            if self.path.rstrip("/").endswith("/models"):
                self.send_json({"object": "list", "data": [{"id": "fake-model", "object": "model"}]})
            else:
                self.send_json({"error": {"message": "not found"}}, 404)

        def do_POST(self):
            length = int(self.headers.get("Content-Length", 0))
            body = self.rfile.read(length).decode()
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self.send_json({"error": {"message": "not found"}}, 404)
                return
            with lock:
                n = state["n"]
                state["n"] += 1
                if args.log:
                    with open(args.log, "a") as f:
                        f.write(json.dumps({"n": n, "body": json.loads(body)}) + "\n")
            self.send_json(replies[n] if n < len(replies) else text_reply("done", n))

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(args.port_file, "w") as f:
        f.write(str(server.server_address[1]))
    server.serve_forever()


if __name__ == "__main__":
    main()
