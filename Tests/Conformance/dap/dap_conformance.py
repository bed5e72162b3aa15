#!/usr/bin/python3
"""Drives whole debugger sessions of `moonflow run --debug` over a real socket,
as an editor would, and checks every message the debugger sends with two
consumers Moonflow did not write:

- the DAP JSON schema (debugProtocol.json, as debugpy ships it), each message
  against its own definition: a response to X against `XResponse`
  (`ErrorResponse` when success is false), an event E against `EEvent`;
- go-dap's typed decoder (`dap.ReadProtocolMessage`, the small Go program in
  decode/), fed the frames byte for byte as they came off the socket;

and that the response to every next, stepIn, restartFrame, stepBack, stepOut,
reverseContinue and continue comes before the `stopped` event that follows it. scripts/check-dap builds the decoder,
fetches the schema and runs this; see docs/debugging.md ("Testing it").

Debian's /usr/bin/python3 runs it: python3-jsonschema is installed there.
"""
import argparse
import collections
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time

from jsonschema import Draft4Validator, RefResolver
from jsonschema.exceptions import best_match

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
COUNTER = os.path.join(ROOT, "plugins", "counter")
ERRORS = os.path.join(ROOT, "Tests", "Conformance", "dap", "fixtures", "errors")
# Today: `...listening on 127.0.0.1:PORT (waiting ...)`; with the token:
# `...listening on 127.0.0.1:PORT with token TOKEN (in FILE)`.
LISTENING = re.compile(r"debugger listening on (\S+):(\d+)(?: with token ([0-9a-fA-F]{32}))?")
READ_TIMEOUT = 10  # seconds for any one message; a session that waits longer is stuck
# After the first stop: each way of going on, then (in every other session) continues until
# the log point has printed (an `output` event); disconnect ends the session at the last stop.
# The two lengths disconnect at different points of the run: a lost disconnect response
# showed at one and not the other.
# The runs are on the virtual clock, so restartFrame, stepBack and reverseContinue go back (a
# re-run of the plugin) and their responses and `stopped` events are checked as the others'.
PLAN = ("next", "stepIn", "restartFrame", "stepBack", "stepOut", "reverseContinue", "continue")
LONG_PLAN = PLAN + ("continue", "continue")


class SessionError(Exception):
    """The session could not go on (no port, a closed connection, a refused request)."""


class Session:
    """One `moonflow run` and one editor attached to it. Every message received is kept,
    raw, in `received`; events that arrive while a request waits are queued for
    `wait_event`."""

    def __init__(self, number, kind, binary, plugin, actions):
        self.number, self.kind = number, kind
        self.received = []  # (raw frame bytes, parsed message or None)
        self.sent = {}  # request seq -> command
        self.events = collections.deque()
        self.violations = []  # (command, request seq): stopped came before its response
        self.problems = []  # what the client itself saw wrong (a bad expression that succeeded, ...)
        self.resuming = None  # [command, seq, answered] while a resume waits for its stop
        self.ended_early = None  # the resume after which the run ended instead of stopping
        self.seq = 0
        self.thread = 1  # the thread of the last stop, which the resumes name
        self.buffer = bytearray()
        self.stderr = []
        self.process = subprocess.Popen(
            [binary, "run", plugin, "--clock", "virtual", "--format", "jsonl", "--actions", actions,
             "--debug", "0", "--debug-wait"],
            cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.announced = threading.Event()
        self.address = None
        self.sock = None

        def drain():  # standard error: the listening line first, the rest kept for reports
            for line in self.process.stderr:
                text = line.decode("utf-8", "replace").rstrip("\n")
                self.stderr.append(text)
                match = LISTENING.search(text)
                if match and not self.announced.is_set():
                    self.address = match.groups()
                    self.announced.set()
            self.announced.set()

        threading.Thread(target=drain, daemon=True).start()

    def connect(self):
        """Reads where the debugger listens (and its token, if it prints one) and connects."""
        if not self.announced.wait(READ_TIMEOUT) or self.address is None:
            raise SessionError("moonflow printed no 'debugger listening on HOST:PORT' line")
        host, port, self.token = self.address
        self.sock = socket.create_connection((host.strip("[]"), int(port)), timeout=READ_TIMEOUT)

    # The wire: Content-Length framing, each frame kept as received.

    def _frame(self):
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end >= 0:
                header = self.buffer[:end].decode("ascii", "replace")
                lengths = [int(v) for n, _, v in (line.partition(":") for line in header.split("\r\n"))
                           if n.strip().lower() == "content-length" and v.strip().isdigit()]
                if not lengths:
                    raise SessionError(f"a frame without a Content-Length header: {header!r}")
                total = end + 4 + lengths[0]
                if len(self.buffer) >= total:
                    raw = bytes(self.buffer[:total])
                    del self.buffer[:total]
                    return raw, raw[end + 4:]
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                raise SessionError(f"no message from the debugger in {READ_TIMEOUT} s")
            if not chunk:
                return None
            self.buffer += chunk

    def _receive(self):
        """The next message off the wire (None once the debugger closed the connection)."""
        frame = self._frame()
        if frame is None:
            return None
        raw, body = frame
        try:
            message = json.loads(body.decode("utf-8"))
        except ValueError:
            message = None  # reported by check(): not JSON
        self.received.append((raw, message))
        if not isinstance(message, dict):
            return {}
        # Ordering: a resume's response must come before the stop it leads to, or an
        # editor reads the stop as belonging to the state before it resumed.
        if self.resuming:
            command, seq, answered = self.resuming
            if message.get("type") == "response" and message.get("request_seq") == seq:
                self.resuming[2] = True
            elif message.get("type") == "event" and message.get("event") == "stopped":
                if not answered:
                    self.violations.append((command, seq))
                self.resuming = None
        return message

    def request(self, command, arguments=None, resume=False):
        self.seq += 1
        seq = self.seq
        message = {"seq": seq, "type": "request", "command": command}
        if arguments is not None:
            message["arguments"] = arguments
        self.sent[seq] = command
        if resume:
            self.resuming = [command, seq, False]
        body = json.dumps(message).encode()
        self.sock.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        while True:
            answer = self._receive()
            if answer is None:
                raise SessionError(f"the debugger closed the connection before answering {command} (seq {seq})")
            if answer.get("type") == "response" and answer.get("request_seq") == seq:
                return answer
            if answer.get("type") == "event":
                self.events.append(answer)

    def ok(self, command, arguments=None, resume=False):
        """A request that must succeed for the session to go on: its body."""
        answer = self.request(command, arguments, resume)
        if answer.get("success") is not True:
            raise SessionError(f"{command} was refused: {answer.get('message')!r}")
        return answer.get("body") or {}

    def wait_event(self, name):
        """The next event `name` (earlier ones are passed over); None if the run ended first."""
        while True:
            event = self.events.popleft() if self.events else self._receive()
            if event is None or event.get("event") in ("terminated", "exited") and name == "stopped":
                return None
            if event.get("event") == name:
                return event

    # The session an editor drives.

    def handshake(self, source, breakpoints, filters):
        self.ok("initialize", {"clientID": "conformance", "clientName": "scripts/check-dap", "adapterID": "moonflow",
                               "linesStartAt1": True, "columnsStartAt1": True, "pathFormat": "path"})
        # With a token printed, attach carries it; until then the debugger serves
        # nothing else. `initialized` comes after initialize's response or attach's.
        self.ok("attach", {"token": self.token} if self.token else {})
        if self.wait_event("initialized") is None:
            raise SessionError("no initialized event")
        self.ok("setBreakpoints", {"source": {"path": source}, "breakpoints": breakpoints})
        self.ok("setExceptionBreakpoints", {"filters": filters})
        self.ok("configurationDone")

    def inspect(self, stopped, full=False):
        """What an editor reads at a stop: threads, the stack, the locals; `full` adds a page
        of the stack, a table opened, evaluate (good and bad) and an unknown command."""
        thread = self.thread = (stopped.get("body") or {}).get("threadId", 1)
        self.ok("threads")
        frames = self.ok("stackTrace", {"threadId": thread}).get("stackFrames") or []
        if not frames:
            raise SessionError("stackTrace gave no frames at a stop")
        frame = frames[0]["id"]
        if full:
            self.ok("stackTrace", {"threadId": thread, "startFrame": 1, "levels": 1})
        scopes = self.ok("scopes", {"frameId": frame}).get("scopes") or []
        if not scopes:
            raise SessionError("scopes gave no scope at a stop")
        variables = self.ok("variables", {"variablesReference": scopes[0]["variablesReference"]}).get("variables") or []
        if not full:
            return
        table = next((v for v in variables if v.get("variablesReference", 0) > 0), None)
        if table:
            self.ok("variables", {"variablesReference": table["variablesReference"]})
        self.ok("evaluate", {"expression": "1 + 1", "frameId": frame, "context": "repl"})
        if self.request("evaluate", {"expression": "1 +", "frameId": frame, "context": "repl"}).get("success"):
            self.problems.append("evaluate of a bad expression ('1 +') answered success: true")
        if self.request("moonflowNoSuchCommand").get("success"):
            self.problems.append("an unknown command answered success: true")

    def steps(self, first):
        """At the first stop a full look; then each resume, a look at each stop; the last stop
        ends the session with disconnect (the run goes on without the editor)."""
        self.inspect(first, full=True)
        self.ok("setExceptionBreakpoints", {"filters": ["uncaught"]})
        for command in LONG_PLAN if self.number % 2 == 0 else PLAN:
            arguments = {"frameId": 1} if command == "restartFrame" else {"threadId": self.thread}
            self.ok(command, arguments, resume=True)
            stopped = self.wait_event("stopped")
            if stopped is None:
                self.ended_early = command  # the run ended: nothing to disconnect from
                return
            self.inspect(stopped)
        self.ok("disconnect")
        while self._receive() is not None:  # what comes after, up to the close, is checked too
            pass

    def close(self):
        if self.sock:
            self.sock.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            self.problems.append("moonflow did not end within 10 s of the session's end")


def line_of(path, text):
    """The 1-based line of `text` in the file, so the breakpoints follow edits of it."""
    with open(path) as f:
        for number, line in enumerate(f, 1):
            if line.strip() == text:
                return number
    raise SystemExit(f"check-dap: {path} has no line {text!r}; update {__file__}")


def counter_session(session):
    source = os.path.join(COUNTER, "init.lua")
    session.handshake(source, [
        {"line": line_of(source, 'if m.type == "add" then')},
        {"line": line_of(source, 'return { type = "add", n = action.by or 1 }'), "condition": "action.by == 2"},
        {"line": line_of(source, 'if action.type == "increment" then'), "hitCondition": "% 2"},
        {"line": line_of(source, "state.count = state.count + m.n"), "logMessage": "count is {state.count}"},
    ], ["all", "uncaught"])
    first = session.wait_event("stopped")
    if first is None:
        raise SessionError("the run ended without stopping at a breakpoint")
    session.steps(first)


def errors_session(session):
    source = os.path.join(ERRORS, "init.lua")
    # A breakpoint in reduce too: every action that gets there stops, so the steps after
    # the errors still find a stop to end the session at.
    session.handshake(source, [{"line": line_of(source, "state.caught = state.caught + 1")}], ["all", "uncaught"])
    first = session.wait_event("stopped")  # `caught`'s error, under `all`
    if first is None:
        raise SessionError("the run ended without stopping at the caught error")
    if (first.get("body") or {}).get("reason") != "exception":
        session.problems.append(f"the first stop of the errors fixture is not an exception: {first.get('body')}")
    session.steps(first)


KINDS = {
    "counter": (COUNTER, counter_session, ['{"type":"increment"}', '{"type":"increment","by":2}',
                                           '{"type":"increment"}', '{"type":"increment"}', '{"type":"reset"}']),
    "errors": (ERRORS, errors_session, ['{"type":"caught"}', '{"type":"boom"}', '{"type":"caught"}',
                                        '{"type":"boom"}', '{"type":"caught"}']),
}


class Checker:
    """The schema's definitions, each resolved against the whole document."""

    def __init__(self, schema_path):
        with open(schema_path) as f:
            self.document = json.load(f)
        self.resolver = RefResolver.from_schema(self.document)
        self.validators = {}

    def definition(self, message):
        kind = message.get("type")
        if kind == "response":
            if message.get("success") is False:
                return "ErrorResponse"
            name = str(message.get("command", ""))
            return name[:1].upper() + name[1:] + "Response"
        if kind == "event":
            name = str(message.get("event", ""))
            return name[:1].upper() + name[1:] + "Event"
        return None

    def errors(self, message):
        """Why the schema rejects `message`: (definition, reason), or None."""
        name = self.definition(message)
        if name is None:
            return "ProtocolMessage", f"type {message.get('type')!r} is neither a response nor an event"
        if name not in self.document["definitions"]:
            return name, "the schema has no such definition (an unknown command or event)"
        if name not in self.validators:
            self.validators[name] = Draft4Validator({"$ref": f"#/definitions/{name}"}, resolver=self.resolver)
        error = best_match(self.validators[name].iter_errors(message))
        if error is None:
            return None
        where = "/" + "/".join(str(p) for p in error.absolute_path)
        return name, f"{error.message} (at {where})"


def check(sessions, checker, decoder):
    """Every failure, as (checker, reason, session, index, message)."""
    failures = []
    frames = []
    for session in sessions:
        expected = 1
        for index, (raw, message) in enumerate(session.received):
            frames.append((session, index, raw, message))
            if not isinstance(message, dict):
                failures.append(("json", "the body is not a JSON object", session, index, raw))
                continue
            found = checker.errors(message)
            if found:
                failures.append((f"schema {found[0]}", found[1], session, index, message))
            # The protocol's own rules the schema cannot state.
            if message.get("seq") != expected:
                failures.append(("protocol", f"seq is {message.get('seq')}, not {expected}: each message's seq is one more than the last",
                                 session, index, message))
            expected = (message.get("seq") if isinstance(message.get("seq"), int) else expected) + 1
            if message.get("type") == "response":
                asked = session.sent.get(message.get("request_seq"))
                if asked is None:
                    failures.append(("protocol", "request_seq names no request the client sent", session, index, message))
                elif asked != message.get("command"):
                    failures.append(("protocol", f"command is {message.get('command')!r}, the request was {asked!r}",
                                     session, index, message))
    # go-dap reads the frames as they came, in one stream.
    stream = b"".join(raw for _, _, raw, _ in frames)
    decoded = subprocess.run([decoder], input=stream, capture_output=True, check=False)
    results = [json.loads(line) for line in decoded.stdout.decode().splitlines() if line.strip()]
    for result in results:
        if "error" in result:
            session, index, raw, message = frames[result["index"]]
            reason = re.sub(r"\(seq: \d+\)", "", result["error"]).strip()
            failures.append(("go-dap" + (" framing" if result.get("framing") else ""), reason, session, index,
                             message if message is not None else raw))
    if decoded.returncode not in (0, 2) or len(results) < len(frames) and decoded.returncode == 0:
        failures.append(("go-dap", f"the decoder exited {decoded.returncode} after {len(results)} of {len(frames)} "
                                   f"messages: {decoded.stderr.decode().strip()}", sessions[0], 0, None))
    return failures


def report(sessions, failures):
    """Failures grouped by what rejected them and why, with one message each as an example."""
    total = len(sessions)
    groups = collections.OrderedDict()
    for checker, reason, session, index, message in failures:
        groups.setdefault((checker, reason), []).append((session, index, message))
    for (checker, reason), hits in groups.items():
        session, index, message = hits[0]
        count = len({s.number for s, _, _ in hits})
        shown = message if isinstance(message, (bytes, type(None))) else json.dumps(message, separators=(",", ":"))
        if shown and len(shown) > 600:
            shown = shown[:600] + "..."
        names = sorted({str(m.get("command") or m.get("event")) for _, _, m in hits if isinstance(m, dict)})
        print(f"FAIL {checker}: {reason}")
        print(f"  {len(hits)} message(s) in {count} of {total} sessions ({', '.join(names)}); "
              f"e.g. session {session.number} ({session.kind}), message {index + 1}:")
        print(f"  {shown}")
    ordering = collections.OrderedDict()
    for session in sessions:
        for command, seq in session.violations:
            ordering.setdefault(command, []).append((session, seq))
    for command, hits in ordering.items():
        sample = ", ".join(f"session {s.number} ({s.kind}) seq {seq}" for s, seq in hits[:5])
        more = f", +{len(hits) - 5} more" if len(hits) > 5 else ""
        print(f"FAIL ordering: {len({s.number for s, _ in hits})} of {total} sessions: stopped before the response "
              f"to {command} ({sample}{more})")
    problems = collections.OrderedDict()
    for session in sessions:
        for problem in session.problems:
            problems.setdefault(problem, []).append(session)
    for problem, hits in problems.items():
        numbers = ", ".join(str(s.number) for s in hits)
        print(f"FAIL session: {problem}: {len(hits)} of {total} sessions ({numbers})")
        # What moonflow said past its listening line, if anything: a crash, a Lua error.
        said = [line for line in hits[0].stderr if not LISTENING.search(line)]
        if said:
            print("  moonflow's standard error in session %d:\n    %s" % (hits[0].number, "\n    ".join(said[-5:])))
    return bool(groups or ordering or any(s.problems for s in sessions))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--moonflow", required=True, help="the moonflow binary")
    parser.add_argument("--schema", required=True, help="debugProtocol.json")
    parser.add_argument("--decoder", required=True, help="the built go-dap decoder (decode/)")
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--dump", help="write every received message here, one JSON line each")
    options = parser.parse_args()
    checker = Checker(options.schema)
    started = time.monotonic()
    sessions = []
    with tempfile.TemporaryDirectory() as scratch:
        files = {}
        for kind, (_, _, lines) in KINDS.items():
            files[kind] = os.path.join(scratch, kind + ".jsonl")
            with open(files[kind], "w") as f:
                f.write("\n".join(lines) + "\n")
        for number in range(1, options.sessions + 1):
            kind = "errors" if number % 5 == 0 else "counter"  # one in five takes the error path
            plugin, drive, _ = KINDS[kind]
            session = None
            try:
                session = Session(number, kind, options.moonflow, plugin, files[kind])
                session.connect()
                drive(session)
            except (SessionError, OSError) as error:
                if session is None:  # the binary did not start
                    print(f"FAIL session {number} ({kind}): {error}")
                    return 1
                session.problems.append(str(error))
            finally:
                if session:
                    session.close()
            sessions.append(session)
    failures = check(sessions, checker, options.decoder)
    if options.dump:
        with open(options.dump, "w") as f:
            for session in sessions:
                for _, message in session.received:
                    f.write(json.dumps({"session": session.number, "message": message}) + "\n")
    failed = report(sessions, failures)
    messages = sum(len(s.received) for s in sessions)
    bad = {s.number for _, _, s, _, _ in failures} | {s.number for s in sessions if s.violations or s.problems}
    early = [s for s in sessions if s.ended_early]
    if early:  # not a failure of the protocol, but less of it was exercised
        print(f"note: {len(early)} sessions ended before disconnect, the run done after a resume: "
              + ", ".join(f"{s.number} ({s.kind}, after {s.ended_early})" for s in early[:10]))
    print(f"check-dap: {len(sessions)} sessions, {messages} messages, {time.monotonic() - started:.1f} s")
    print(f"{len(sessions) - len(bad)} passed, {len(bad)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
