#!/usr/bin/env python3
"""A stand-in freedesktop notification server for the test suite.

Usage: notification_listener.py --address unix:path=/tmp/x/bus --record FILE

It owns org.freedesktop.Notifications on the given D-Bus session bus, prints
"ready" once it does, and appends every Notify call to FILE as one JSON object
per line, so a test can check that a program sent a desktop notification.
Standard library only: the test machines have no D-Bus bindings for Python,
so this speaks the wire protocol itself (just the parts a server needs).
"""
import argparse
import json
import os
import signal
import socket
import struct
import sys
from collections import deque, namedtuple
from urllib.parse import unquote

MAX_MESSAGE = 64 * 1024 * 1024  # refuse anything bigger rather than buffer it
MAX_DEPTH = 64                  # nesting limit, so hostile input cannot recurse forever
SETUP_TIMEOUT = 10.0            # connect/auth/Hello/RequestName must not hang a test

METHOD_CALL, METHOD_RETURN, ERROR = 1, 2, 3  # 4, SIGNAL, is only ever received
NO_REPLY_EXPECTED = 0x1
PATH, INTERFACE, MEMBER, ERROR_NAME, REPLY_SERIAL, DESTINATION, SENDER, SIGNATURE = range(1, 9)

OBJECT_PATH = "/org/freedesktop/Notifications"
INTERFACE_NAME = "org.freedesktop.Notifications"
UNKNOWN_METHOD = "org.freedesktop.DBus.Error.UnknownMethod"
INVALID_ARGS = "org.freedesktop.DBus.Error.InvalidArgs"

# type code -> (alignment and size, struct format) for the fixed-size types
FIXED = {"y": (1, "B"), "b": (4, "I"), "n": (2, "h"), "q": (2, "H"), "i": (4, "i"),
         "u": (4, "I"), "x": (8, "q"), "t": (8, "Q"), "d": (8, "d"), "h": (4, "I")}
ALIGN = {**{c: size for c, (size, _) in FIXED.items()},
         "s": 4, "o": 4, "g": 1, "v": 1, "a": 4, "(": 8, "{": 8}
BASIC = "ybnqiuxtdsogh"

Variant = namedtuple("Variant", "signature value")
Message = namedtuple("Message", "type flags serial fields body")


class ProtocolError(Exception):
    """The bus said or sent something this program cannot accept."""


class BusClosed(Exception):
    """The bus closed the connection (e.g. dbus-daemon was killed): time to exit."""


def _type_end(sig, i, depth=0):
    """Index just past the single complete type starting at sig[i]; validates as it goes."""
    if depth > MAX_DEPTH:
        raise ProtocolError("signature nested too deeply")
    if i >= len(sig):
        raise ProtocolError(f"truncated signature {sig!r}")
    c = sig[i]
    if c in BASIC or c == "v":
        return i + 1
    if c == "a" and sig[i + 1:i + 2] == "{":  # dict entries only exist inside arrays
        if sig[i + 2:i + 3] == "" or sig[i + 2] not in BASIC:
            raise ProtocolError(f"dict key must be a basic type in {sig!r}")
        j = _type_end(sig, i + 3, depth + 1)
        if sig[j:j + 1] != "}":
            raise ProtocolError(f"dict entry needs exactly two types in {sig!r}")
        return j + 1
    if c == "a":
        return _type_end(sig, i + 1, depth + 1)
    if c == "(" and sig[i + 1:i + 2] != ")":
        j = i + 1
        while sig[j:j + 1] != ")":
            j = _type_end(sig, j, depth + 1)
        return j + 1
    raise ProtocolError(f"bad type code {c!r} in signature {sig!r}")


def split_signature(sig):
    """'susa{sv}' -> ['s', 'u', 's', 'a{sv}']."""
    types, i = [], 0
    while i < len(sig):
        j = _type_end(sig, i)
        types.append(sig[i:j])
        i = j
    return types


class Reader:
    """Unmarshals from one whole message. Offsets count from the message start,
    because that is what D-Bus alignment is defined against (the body starts
    on an 8-byte boundary, so body alignment comes out the same)."""

    def __init__(self, data):
        self.data, self.pos = data, 0
        self.endian = ">" if data[:1] == b"B" else "<"

    def take(self, n):
        if self.pos + n > len(self.data):
            raise ProtocolError("value runs past the end of the message")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def align(self, n):
        self.take(-self.pos % n)

    def read(self, t, depth=0):
        if depth > MAX_DEPTH:
            raise ProtocolError("value nested too deeply")
        c = t[0]
        if c in FIXED:
            size, fmt = FIXED[c]
            self.align(size)
            (value,) = struct.unpack(self.endian + fmt, self.take(size))
            return bool(value) if c == "b" else value
        if c in "sog":
            raw = self.take(self.read("y" if c == "g" else "u") + 1)
            if raw[-1] != 0:
                raise ProtocolError("string is not NUL-terminated")
            try:
                return raw[:-1].decode("utf-8")
            except UnicodeDecodeError:
                raise ProtocolError("string is not valid UTF-8") from None
        if c == "v":
            sig = self.read("g")
            if len(split_signature(sig)) != 1:
                raise ProtocolError(f"variant signature {sig!r} is not one complete type")
            return Variant(sig, self.read(sig, depth + 1))
        if c == "a":
            length, elem = self.read("u"), t[1:]
            self.align(ALIGN[elem[0]])  # padding is there even when the array is empty
            end = self.pos + length
            if length > MAX_MESSAGE or end > len(self.data):
                raise ProtocolError("array runs past the end of the message")
            if elem == "y":
                return self.take(length)
            items = []
            while self.pos < end:
                items.append(self.read(elem, depth + 1))
            if self.pos != end:
                raise ProtocolError("array contents do not match its length")
            return dict(items) if elem[0] == "{" else items
        self.align(8)  # struct "(...)" or dict entry "{..}"
        return tuple(self.read(field, depth + 1) for field in split_signature(t[1:-1]))


class Writer:
    """Marshals little-endian values; a reply body is built on its own from
    offset 0, which is valid because the header is padded to 8 bytes."""

    def __init__(self):
        self.buf = bytearray()

    def pad(self, n):
        self.buf += bytes(-len(self.buf) % n)

    def write(self, t, value):
        c = t[0]
        if c in FIXED:
            size, fmt = FIXED[c]
            self.pad(size)
            self.buf += struct.pack("<" + fmt, int(value) if c == "b" else value)
        elif c in "sog":
            raw = value.encode("utf-8")
            self.write("y" if c == "g" else "u", len(raw))
            self.buf += raw + b"\0"
        elif c == "v":
            self.write("g", value.signature)
            self.write(value.signature, value.value)
        elif c == "a":
            self.pad(4)
            length_at = len(self.buf)
            self.buf += bytes(4)
            elem = t[1:]
            self.pad(ALIGN[elem[0]])  # the length excludes this padding
            start = len(self.buf)
            for item in value.items() if elem[0] == "{" else value:
                self.write(elem, item)
            struct.pack_into("<I", self.buf, length_at, len(self.buf) - start)
        else:
            self.pad(8)
            for field, item in zip(split_signature(t[1:-1]), value, strict=True):
                self.write(field, item)


def encode_message(mtype, serial, fields, sig="", body=()):
    """fields maps header field codes to Variants; SIGNATURE is added when there is a body."""
    payload = Writer()
    for t, value in zip(split_signature(sig), body, strict=True):
        payload.write(t, value)
    if sig:
        fields[SIGNATURE] = Variant("g", sig)
    header = Writer()
    header.buf += b"l" + bytes([mtype, 0, 1])
    header.write("u", len(payload.buf))
    header.write("u", serial)
    header.write("a(yv)", sorted(fields.items()))
    header.pad(8)
    return bytes(header.buf + payload.buf)


def frame_size(buf):
    """Size of the message at the start of buf, from its fixed 16-byte prefix,
    or None if not even that has arrived. A bad prefix leaves no way to find
    the next message, so it is fatal rather than skipped."""
    if len(buf) < 16:
        return None
    if buf[0] not in b"lB" or buf[3] != 1:
        raise ProtocolError(f"not a D-Bus 1 message (starts {bytes(buf[:4])!r})")
    body_len, _, fields_len = struct.unpack_from("<III" if buf[0] == ord("l") else ">III", buf, 4)
    size = 16 + fields_len + (-fields_len % 8) + body_len
    if size > MAX_MESSAGE:
        raise ProtocolError(f"refusing a {size}-byte message (limit {MAX_MESSAGE})")
    return size


def decode_message(data):
    reader = Reader(data)
    reader.pos = 8
    serial = reader.read("u")
    fields = {code: var.value for code, var in reader.read("a(yv)")}
    reader.align(8)
    sig = fields.get(SIGNATURE, "")
    if not isinstance(sig, str):
        raise ProtocolError("SIGNATURE header field is not a signature")
    body = [reader.read(t) for t in split_signature(sig)]
    if reader.pos != len(data):
        raise ProtocolError("body length does not match its signature")
    return Message(data[1], data[2], serial, fields, body)


def connect(address):
    """Tries each unix:path= / unix:abstract= entry of a ';'-separated address in turn."""
    problems = []
    for entry in address.split(";"):
        transport, _, params = entry.partition(":")
        keys = {}
        for pair in filter(None, params.split(",")):
            key, _, value = pair.partition("=")
            keys[key] = unquote(value)  # guid= and other keys are simply unused
        if transport != "unix" or not ({"path", "abstract"} & keys.keys()):
            continue
        target = keys["path"] if "path" in keys else "\0" + keys["abstract"]
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(SETUP_TIMEOUT)
        try:
            sock.connect(target)
            return sock
        except OSError as error:
            sock.close()
            problems.append(f"{entry}: {error}")
    raise ProtocolError(f"cannot connect to {address!r}: "
                        + ("; ".join(problems) or "no unix:path= or unix:abstract= entry"))


class Bus:
    def __init__(self, address):
        self.sock = connect(address)
        self.buf = bytearray()
        self.serial = 0
        self.queued = deque()  # messages that arrived while call() waited for its reply
        # SASL: a NUL byte first, then EXTERNAL with our uid in hex of its decimal digits.
        uid = str(os.getuid()).encode().hex()
        self.sock.sendall(b"\0AUTH EXTERNAL " + uid.encode() + b"\r\n")
        while b"\r\n" not in self.buf:
            if len(self.buf) > 4096:
                raise ProtocolError("over-long authentication reply")
            self._fill()
        line, _, rest = bytes(self.buf).partition(b"\r\n")
        if not line.startswith(b"OK "):
            raise ProtocolError(f"bus refused authentication: {line!r}")
        self.buf = bytearray(rest)
        self.sock.sendall(b"BEGIN\r\n")

    def _fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise BusClosed()
        self.buf += chunk

    def _next(self):
        """Next well-formed message off the socket; malformed ones are logged and skipped."""
        while True:
            size = frame_size(self.buf)
            if size is None or len(self.buf) < size:
                self._fill()
                continue
            data = bytes(self.buf[:size])
            del self.buf[:size]
            try:
                return decode_message(data)
            except ProtocolError as error:
                log(f"skipping malformed message: {error}")

    def receive(self):
        return self.queued.popleft() if self.queued else self._next()

    def send(self, mtype, fields, sig="", body=()):
        self.serial += 1
        self.sock.sendall(encode_message(mtype, self.serial, fields, sig, body))
        return self.serial

    def call_bus(self, member, sig="", body=()):
        """Calls a method of the bus itself and waits for its reply."""
        serial = self.send(METHOD_CALL, {
            PATH: Variant("o", "/org/freedesktop/DBus"),
            INTERFACE: Variant("s", "org.freedesktop.DBus"),
            MEMBER: Variant("s", member),
            DESTINATION: Variant("s", "org.freedesktop.DBus")}, sig, body)
        while True:
            msg = self._next()
            if msg.type in (METHOD_RETURN, ERROR) and msg.fields.get(REPLY_SERIAL) == serial:
                if msg.type == ERROR:
                    raise ProtocolError(f"{member} failed: {msg.fields.get(ERROR_NAME)} {msg.body}")
                return msg.body
            self.queued.append(msg)


def plain(variant):
    """A hint value as JSON: numbers, strings, bools and byte arrays decoded,
    anything else (e.g. image-data's struct) given as its signature string."""
    if variant.signature in BASIC:
        return variant.value
    if variant.signature == "ay":
        return list(variant.value)
    return variant.signature


class Server:
    # member -> (input signature, output signature)
    METHODS = {"Notify": ("susssasa{sv}i", "u"), "GetCapabilities": ("", "as"),
               "GetServerInformation": ("", "ssss"), "CloseNotification": ("u", "")}

    def __init__(self, bus, record):
        self.bus, self.record, self.next_id = bus, record, 1

    def dispatch(self, msg):
        path, member = msg.fields.get(PATH), msg.fields.get(MEMBER)
        interface, sig = msg.fields.get(INTERFACE), msg.fields.get(SIGNATURE, "")
        if path == OBJECT_PATH and interface in (None, INTERFACE_NAME) and member in self.METHODS:
            in_sig, out_sig = self.METHODS[member]
            if sig != in_sig:
                return self.reply(msg, "s", [f"{member} takes ({in_sig}), not ({sig})"], INVALID_ARGS)
            return self.reply(msg, out_sig, getattr(self, member)(msg, *msg.body))
        # `gdbus call` introspects first to learn the argument types; without this
        # it would send int32 for replaces_id and fail to type an empty '[]'.
        if (path == OBJECT_PATH and member == "Introspect" and sig == ""
                and interface in (None, "org.freedesktop.DBus.Introspectable")):
            return self.reply(msg, "s", [self.introspection()])
        self.reply(msg, "s", [f"No method {interface}.{member} on {path}"], UNKNOWN_METHOD)

    def introspection(self):
        def args(sig, direction):
            return "".join(f'<arg type="{t}" direction="{direction}"/>' for t in split_signature(sig))
        methods = "".join(f'<method name="{name}">{args(i, "in")}{args(o, "out")}</method>'
                          for name, (i, o) in self.METHODS.items())
        return f'<node><interface name="{INTERFACE_NAME}">{methods}</interface></node>'

    def reply(self, msg, sig, body, error_name=None):
        """A method return, or an error (body = [message]) when error_name is given."""
        if msg.flags & NO_REPLY_EXPECTED:
            return
        fields = {REPLY_SERIAL: Variant("u", msg.serial)}
        if SENDER in msg.fields:
            fields[DESTINATION] = Variant("s", msg.fields[SENDER])
        if error_name:
            fields[ERROR_NAME] = Variant("s", error_name)
        self.bus.send(ERROR if error_name else METHOD_RETURN, fields, sig, body)

    def Notify(self, msg, app_name, replaces_id, app_icon, summary, body, actions, hints, timeout):
        entry = {"app_name": app_name, "replaces_id": replaces_id, "app_icon": app_icon,
                 "summary": summary, "body": body, "actions": actions,
                 "hints": {key: plain(value) for key, value in hints.items()},
                 "expire_timeout": timeout, "sender": msg.fields.get(SENDER)}
        # Written and closed before the reply goes out, so once the sender has
        # its id, the line is in the file for the test to read.
        with open(self.record, "a", encoding="utf-8") as out:
            out.write(json.dumps(entry, ensure_ascii=False) + "\n")
            out.flush()
        if replaces_id:  # the spec: replacing keeps the notification's id
            return [replaces_id]
        self.next_id += 1
        return [self.next_id - 1]

    def GetCapabilities(self, msg):
        return [["body"]]

    def GetServerInformation(self, msg):
        return ["sitefs-test-listener", "sitefs", "1", "1.2"]

    def CloseNotification(self, msg, notification_id):
        return []


def log(text):
    print(f"notification_listener: {text}", file=sys.stderr, flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--address", default=os.environ.get("DBUS_SESSION_BUS_ADDRESS"),
                        help="D-Bus address, e.g. unix:path=/tmp/x/bus")
    parser.add_argument("--record", required=True, help="file that gets one JSON line per Notify")
    args = parser.parse_args()
    if not args.address:
        parser.error("--address is required (or set DBUS_SESSION_BUS_ADDRESS)")

    def stop(signum, frame):
        raise SystemExit(0)  # unwinds normally; the record file is closed after every line

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    ready = False
    try:
        open(args.record, "a").close()  # fail now, not at the first Notify, if it is unwritable
        bus = Bus(args.address)
        bus.call_bus("Hello")
        (result,) = bus.call_bus("RequestName", "su", [INTERFACE_NAME, 4])  # 4 = DO_NOT_QUEUE
        if result != 1:
            raise ProtocolError(f"could not become the primary owner of {INTERFACE_NAME} (RequestName said {result})")
        bus.sock.settimeout(None)
        print("ready", flush=True)
        ready = True
        server = Server(bus, args.record)
        while True:
            msg = bus.receive()
            if msg.type == METHOD_CALL:  # signals (NameAcquired...) and stray replies are ignored
                server.dispatch(msg)
    except (BusClosed, ConnectionResetError, BrokenPipeError):
        log("bus connection closed, exiting")
        return 0 if ready else 1
    except (ProtocolError, OSError) as error:  # TimeoutError included: setup took > 10 s
        log(f"error: {error}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
