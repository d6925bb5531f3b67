#!/usr/bin/env python3
"""A fake Firebase Cloud Messaging HTTP v1 server and Google OAuth 2 token endpoint, for the
push tests (t/api/*/push*.t) and the dev server (docs/push.md). Python's standard library only;
the JWT's RS256 signature is checked by OpenSSL's command-line tool against the public key.

    fcm.py --port-file FILE --pubkey KEY.pub --email SA-EMAIL --project ID [--delay SECONDS]

Listens on 127.0.0.1 (a free port, written to FILE once it listens), HTTP/1.1 keep-alive.

  POST /token      the JWT-bearer grant: checks grant_type, the JWT's header (RS256), its
                   signature, iss (SA-EMAIL), scope (firebase.messaging), aud (this URL),
                   iat/exp (at most one hour); answers an access token.
  POST /v1/projects/ID/messages:send
                   needs a bearer /token issued (401 otherwise); checks the message's shape
                   (token, notification title and body, data of strings); answers 200, or
                   what the control said for that device token.
  POST /control    JSON: {"token": T or "*", "answers": [{"status": 503, "retryAfter": "1",
                   "delay": 0.1}, ...]} queues answers for T's next calls ("*": any token);
                   {"revoke": true} makes every bearer issued so far refused (401);
                   {"tokenStatus": 500} makes /token fail (0: work again);
                   {"delay": S} sets the delay of every answer; {"reset": true} forgets all.
  GET /calls       JSON: every messages:send call so far: {"token", "status", "message",
                   "at"} (at: seconds since the epoch, when it arrived); and "tokens": how many
                   bearers /token issued, "refused": JWTs refused with why.
"""
import argparse
import base64
import json
import os
import secrets
import subprocess
import tempfile
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SCOPE = "https://www.googleapis.com/auth/firebase.messaging"

ERRORS = {
    400: {"error": {"code": 400, "message": "The registration token is not a valid FCM "
                    "registration token", "status": "INVALID_ARGUMENT", "details": [
                        {"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError",
                         "errorCode": "INVALID_ARGUMENT"},
                        {"@type": "type.googleapis.com/google.rpc.BadRequest",
                         "fieldViolations": [{"field": "message.token",
                                              "description": "Invalid registration token"}]}]}},
    404: {"error": {"code": 404, "message": "Requested entity was not found.",
                    "status": "NOT_FOUND", "details": [
                        {"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError",
                         "errorCode": "UNREGISTERED"}]}},
    429: {"error": {"code": 429, "message": "Quota exceeded.", "status": "RESOURCE_EXHAUSTED"}},
    500: {"error": {"code": 500, "message": "Internal error.", "status": "INTERNAL"}},
    503: {"error": {"code": 503, "message": "The service is currently unavailable.",
                    "status": "UNAVAILABLE"}},
}

lock = threading.Lock()
state = {"queues": {}, "bearers": {}, "revoked": set(), "token_status": 0, "delay": 0.0,
         "calls": [], "issued": 0, "refused": []}


def b64url_decode(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def verify_jwt(jwt, pubkey, email, aud):
    """None if the assertion is one Google would take, else why not."""
    parts = jwt.split(".")
    if len(parts) != 3:
        return "not three parts"
    try:
        header = json.loads(b64url_decode(parts[0]))
        claims = json.loads(b64url_decode(parts[1]))
        sig = b64url_decode(parts[2])
    except ValueError:
        return "not base64url JSON"
    if header.get("alg") != "RS256":
        return "alg is not RS256"
    with tempfile.TemporaryDirectory() as d:
        data, sigf = os.path.join(d, "data"), os.path.join(d, "sig")
        with open(data, "wb") as f:
            f.write((parts[0] + "." + parts[1]).encode())
        with open(sigf, "wb") as f:
            f.write(sig)
        r = subprocess.run(["openssl", "dgst", "-sha256", "-verify", pubkey, "-signature", sigf,
                            data], capture_output=True, check=False)
        if r.returncode != 0:
            return "bad signature"
    now = time.time()
    if claims.get("iss") != email:
        return "iss is not the service account"
    if claims.get("scope") != SCOPE:
        return "scope is not firebase.messaging"
    if claims.get("aud") != aud:
        return "aud is not the token endpoint"
    iat, exp = claims.get("iat"), claims.get("exp")
    if not isinstance(iat, int) or not isinstance(exp, int):
        return "iat/exp not integers"
    if abs(iat - now) > 300 or exp <= iat or exp - iat > 3600:
        return "iat/exp out of range"
    return None


def message_problem(body):
    """None if body is a messages:send request FCM would take, else why not."""
    msg = body.get("message") if isinstance(body, dict) else None
    if not isinstance(msg, dict) or not isinstance(msg.get("token"), str) or not msg["token"]:
        return "no message.token"
    note = msg.get("notification")
    if not isinstance(note, dict) or not isinstance(note.get("title"), str) \
            or not isinstance(note.get("body"), str):
        return "no notification title/body"
    data = msg.get("data", {})
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        return "data values must be strings"
    return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def answer(self, status, obj, headers=None):
        out = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=UTF-8")
        self.send_header("Content-Length", str(len(out)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(out)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path == "/calls":
            with lock:
                self.answer(200, {"calls": state["calls"], "tokens": state["issued"],
                                  "refused": state["refused"]})
        else:
            self.answer(404, {"error": "no such path"})

    def do_POST(self):
        raw = self.body()
        if self.path == "/token":
            return self.token(raw)
        if self.path == "/control":
            return self.control(json.loads(raw or b"{}"))
        if self.path == "/v1/projects/%s/messages:send" % self.server.opts.project:
            return self.send(raw)
        return self.answer(404, ERRORS[404])

    def token(self, raw):
        form = urllib.parse.parse_qs(raw.decode())
        aud = "http://127.0.0.1:%d/token" % self.server.server_port
        why = None
        if form.get("grant_type") != ["urn:ietf:params:oauth:grant-type:jwt-bearer"]:
            why = "grant_type"
        elif len(form.get("assertion", [])) != 1:
            why = "no assertion"
        else:
            why = verify_jwt(form["assertion"][0], self.server.opts.pubkey,
                             self.server.opts.email, aud)
        with lock:
            status = state["token_status"]
            if why:
                state["refused"].append(why)
        if why:
            return self.answer(400, {"error": "invalid_grant", "error_description": why})
        if status:
            return self.answer(status, {"error": "unavailable"})
        bearer = "ya29.fake-" + secrets.token_urlsafe(24)
        with lock:
            state["bearers"][bearer] = time.time() + 3600
            state["issued"] += 1
        return self.answer(200, {"access_token": bearer, "expires_in": 3599,
                                 "token_type": "Bearer"})

    def control(self, c):
        with lock:
            if c.get("reset"):
                state["queues"].clear()
                state["calls"].clear()
                state["refused"].clear()
                state["token_status"] = 0
            if "token" in c:
                state["queues"].setdefault(c["token"], []).extend(c.get("answers", []))
            if c.get("revoke"):
                state["revoked"].update(state["bearers"].keys())
            if "tokenStatus" in c:
                state["token_status"] = int(c["tokenStatus"])
            if "delay" in c:
                state["delay"] = float(c["delay"])
        return self.answer(200, {"ok": True})

    def send(self, raw):
        auth = self.headers.get("Authorization", "")
        bearer = auth[len("Bearer "):] if auth.startswith("Bearer ") else ""
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        problem = message_problem(body) if body is not None else "not JSON"
        token = body["message"]["token"] if not problem else ""
        with lock:
            ok_bearer = bearer in state["bearers"] and bearer not in state["revoked"] \
                and state["bearers"][bearer] > time.time()
            plan = {}
            if ok_bearer and not problem:
                for key in (token, "*"):
                    if state["queues"].get(key):
                        plan = state["queues"][key].pop(0)
                        break
            delay = plan.get("delay", state["delay"])
            status = 401 if not ok_bearer else 400 if problem else plan.get("status", 200)
            state["calls"].append({"token": token, "status": status, "at": time.time(),
                                   "message": body.get("message") if body else None,
                                   "problem": problem,
                                   "raw": raw.decode("utf-8", "replace") if problem else None})
        if delay:
            time.sleep(delay)
        if status == 401:
            return self.answer(401, {"error": {"code": 401, "status": "UNAUTHENTICATED",
                                               "message": "Request had invalid credentials."}})
        if status == 200:
            return self.answer(200, {"name": "projects/%s/messages/%s" % (
                self.server.opts.project, secrets.token_hex(8))})
        if problem:
            return self.answer(400, {"error": {"code": 400, "message": "Invalid JSON payload: "
                                               + problem, "status": "INVALID_ARGUMENT"}})
        headers = {"Retry-After": plan["retryAfter"]} if "retryAfter" in plan else None
        return self.answer(status, ERRORS.get(status, ERRORS[500]), headers)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--pubkey", required=True)
    ap.add_argument("--email", required=True)
    ap.add_argument("--project", required=True)
    ap.add_argument("--delay", type=float, default=0.0)
    opts = ap.parse_args()
    state["delay"] = opts.delay
    ThreadingHTTPServer.daemon_threads = True
    ThreadingHTTPServer.request_queue_size = 256
    srv = ThreadingHTTPServer(("127.0.0.1", opts.port), Handler)
    srv.opts = opts
    tmp = opts.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(srv.server_port))
    os.rename(tmp, opts.port_file)
    srv.serve_forever()


if __name__ == "__main__":
    main()
