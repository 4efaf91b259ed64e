#!/usr/bin/python3
"""A minimal CRI (runtime.v1) client: the calls kubelet makes to run a pod.

Debian has no crictl and no generated CRI stubs, so the few messages used
are encoded and decoded here by hand (protobuf wire format: varints and
length-delimited fields; field numbers from k8s.io/cri-api's v1 api.proto)
and sent with grpcio's generic unary calls.

  cri_client.py SOCKET version
  cri_client.py SOCKET image REF                  exit 0 if CRI knows REF
  cri_client.py SOCKET runp HANDLER NAME CGROUP_PARENT LOG_DIR   -> pod id
  cri_client.py SOCKET podstatus POD              -> "<state> <handler>"
  cri_client.py SOCKET create POD NAME CGROUP_PARENT LOG_DIR IMAGE CNAME LOG CMD...
                                                  -> container id
  cri_client.py SOCKET start|rm ID
  cri_client.py SOCKET status ID                  -> "<state> <exit code>"
  cri_client.py SOCKET stop ID TIMEOUT
  cri_client.py SOCKET stopp|rmp POD

The pod uses the host's network (no CNI needed), a pid namespace per
container (kubelet's default), and the given cgroup parent.
"""
import sys

import grpc

# Enum values of the CRI API.
NODE, CONTAINER = 2, 1
UNCONFINED = 1
CONTAINER_STATES = ["CREATED", "RUNNING", "EXITED", "UNKNOWN"]
SANDBOX_STATES = ["READY", "NOTREADY"]


def varint(n):
    n &= (1 << 64) - 1  # negative int64: two's complement, 10 bytes
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def msg(*fields):
    """Encode (number, value) pairs; value: int/bool (varint), str/bytes
    (length-delimited; bytes is an encoded message), list (repeated)."""
    out = bytearray()
    for num, val in fields:
        for v in val if isinstance(val, list) else [val]:
            if isinstance(v, (bool, int)):
                out += varint(num << 3) + varint(int(v))
            else:
                data = v.encode() if isinstance(v, str) else v
                out += varint(num << 3 | 2) + varint(len(data)) + data
    return bytes(out)


def parse(data):
    """Decode a message into {number: [int or bytes, ...]}."""
    fields, i = {}, 0

    def read_varint():
        nonlocal i
        n = shift = 0
        while True:
            b = data[i]
            i += 1
            n |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return n

    while i < len(data):
        key = read_varint()
        kind = key & 7
        if kind == 0:
            val = read_varint()
        elif kind == 2:
            n = read_varint()
            val, i = data[i:i + n], i + n
        elif kind == 1:
            val, i = data[i:i + 8], i + 8
        elif kind == 5:
            val, i = data[i:i + 4], i + 4
        else:
            raise ValueError("unsupported wire type %d" % kind)
        fields.setdefault(key >> 3, []).append(val)
    return fields


def first(fields, num, default=None):
    return fields.get(num, [default])[0]


def int32(n):
    n &= (1 << 32) - 1
    return n - (1 << 32) if n >> 31 else n


def sandbox_config(name, cgroup_parent, log_dir):
    metadata = msg((1, name), (2, name + "-uid"), (3, "husk-test"))
    namespaces = msg((1, NODE), (2, CONTAINER))
    linux = msg((1, cgroup_parent), (2, msg((1, namespaces))))
    return msg((1, metadata), (3, log_dir), (8, linux))


def main(argv):
    sock, cmd, args = argv[1], argv[2], argv[3:]
    channel = grpc.insecure_channel("unix://" + sock)

    def call(method, request):
        rpc = channel.unary_unary("/runtime.v1.%s/%s" % (
            "ImageService" if method == "ImageStatus" else "RuntimeService", method))
        return parse(rpc(request, timeout=30))

    if cmd == "version":
        r = call("Version", msg((1, "v1")))
        print(first(r, 2, b"").decode(), first(r, 3, b"").decode(), first(r, 4, b"").decode())
    elif cmd == "image":
        r = call("ImageStatus", msg((1, msg((1, args[0])))))
        return 0 if 1 in r else 1
    elif cmd == "runp":
        handler, name, cgroup_parent, log_dir = args
        r = call("RunPodSandbox", msg((1, sandbox_config(name, cgroup_parent, log_dir)), (2, handler)))
        print(first(r, 1).decode())
    elif cmd == "podstatus":
        st = parse(first(call("PodSandboxStatus", msg((1, args[0]))), 1, b""))
        print(SANDBOX_STATES[first(st, 3, 0)], first(st, 9, b"").decode())
    elif cmd == "create":
        pod, name, cgroup_parent, log_dir, image, cname, log_path = args[:7]
        # Unconfined AppArmor: with AppArmor on, containerd would otherwise
        # load its default profile into the host's kernel. containerd 1.6
        # reads the older string field (9), later ones the profile (16).
        security = msg((3, msg((1, NODE), (2, CONTAINER))), (9, "unconfined"), (16, msg((1, UNCONFINED))))
        config = msg((1, msg((1, cname))), (2, msg((1, image))), (3, args[7:]),
                     (11, log_path), (15, msg((2, security))))
        r = call("CreateContainer", msg((1, pod), (2, config),
                                        (3, sandbox_config(name, cgroup_parent, log_dir))))
        print(first(r, 1).decode())
    elif cmd == "start":
        call("StartContainer", msg((1, args[0])))
    elif cmd == "status":
        st = parse(first(call("ContainerStatus", msg((1, args[0]))), 1, b""))
        print(CONTAINER_STATES[first(st, 3, 0)], int32(first(st, 7, 0)))
    elif cmd == "stop":
        call("StopContainer", msg((1, args[0]), (2, int(args[1]))))
    elif cmd == "rm":
        call("RemoveContainer", msg((1, args[0])))
    elif cmd == "stopp":
        call("StopPodSandbox", msg((1, args[0])))
    elif cmd == "rmp":
        call("RemovePodSandbox", msg((1, args[0])))
    else:
        print("cri_client.py: unknown command " + cmd, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except grpc.RpcError as e:
        print("%s: %s" % (e.code().name, e.details()), file=sys.stderr)
        sys.exit(1)
