#!/usr/bin/env python3
"""A throw-away DNS server for tests/sandbox/checks/proxy.sh, on ADDR port 53
(of a network namespace the test made). Names (class IN):
  dns.test      A 127.0.0.2, no AAAA
  big.test      truncated over UDP; over TCP a CNAME to dns.test and its A
  noaddr.test   no record (NOERROR, empty)
  fail.test     SERVFAIL
  slow.test     never answered
  anything else NXDOMAIN
Usage: dns-server.py ADDR READY_FILE"""
import socket
import socketserver
import struct
import sys
import threading


def question(msg):
    """(id, flags, name, qtype, end of the question) of a query."""
    qid, flags = struct.unpack(">HH", msg[:4])
    at, labels = 12, []
    while msg[at]:
        labels.append(msg[at + 1:at + 1 + msg[at]].decode().lower())
        at += 1 + msg[at]
    qtype, = struct.unpack(">H", msg[at + 1:at + 3])
    return qid, flags, ".".join(labels), qtype, at + 5


def answer(msg, tcp):
    qid, flags, name, qtype, end = question(msg)
    if name == "slow.test":
        return None
    rcode, tc, records = 0, 0, b""
    count = 0
    if name == "dns.test" and qtype == 1:
        records, count = b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 60, 4) + socket.inet_aton("127.0.0.2"), 1
    elif name == "big.test" and not tcp:
        tc = 0x0200
    elif name == "big.test" and qtype == 1:
        target = b"\x03dns\x04test\x00"
        records = b"\xc0\x0c" + struct.pack(">HHIH", 5, 1, 60, len(target)) + target
        # the A record's owner points into the CNAME's data
        records += struct.pack(">H", 0xc000 | (end + 12)) + struct.pack(">HHIH", 1, 1, 60, 4) + socket.inet_aton("127.0.0.2")
        count = 2
    elif name == "fail.test":
        rcode = 2
    elif name not in ("dns.test", "big.test", "noaddr.test"):
        rcode = 3
    head = struct.pack(">HHHHHH", qid, 0x8180 | tc | rcode, 1, count, 0, 0)
    return head + msg[12:end] + records


class Udp(socketserver.BaseRequestHandler):
    def handle(self):
        data, sock = self.request
        reply = answer(data, False)
        if reply:
            sock.sendto(reply, self.client_address)


class Tcp(socketserver.StreamRequestHandler):
    def handle(self):  # queries until the client closes (glibc sends A and AAAA on one connection)
        while len(size := self.rfile.read(2)) == 2:
            reply = answer(self.rfile.read(struct.unpack(">H", size)[0]), True)
            if reply:
                self.wfile.write(struct.pack(">H", len(reply)) + reply)


addr, ready = sys.argv[1], sys.argv[2]
udp = socketserver.ThreadingUDPServer((addr, 53), Udp)
tcp = socketserver.ThreadingTCPServer((addr, 53), Tcp)
threading.Thread(target=tcp.serve_forever, daemon=True).start()
open(ready, "w").close()
udp.serve_forever()
