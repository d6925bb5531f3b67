#!/usr/bin/env python3
"""A provider that answers every Dojah "Validate BVN" call with a match, on 127.0.0.1:PORT
(HTTP/1.1, keep-alive): for scripts/memcheck, which runs httpd alone under valgrind."""
import http.server
import sys

ANSWER = (b'{"entity":{"bvn":{"status":true},"first_name":{"status":true},'
          b'"date_of_birth":{"status":true}}}')


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(ANSWER)))
        self.end_headers()
        self.wfile.write(ANSWER)

    def log_message(self, *args):
        pass


http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
