#!/usr/bin/env python3
"""net_wire_proxy.py -- a man in the middle between one rank and the job's store.

    net_wire_proxy.py LISTEN_PORT STORE_PORT CAPTURE_FILE [tamper]

Takes one connection on 127.0.0.1:LISTEN_PORT, connects it to the store on
127.0.0.1:STORE_PORT and relays both ways, appending every byte it relays to
CAPTURE_FILE (what a sniffer on the wire sees). With `tamper` it flips one bit
in the first all-gather reply the store sends (the store's stream: a 32-byte
nonce, then frames of {u32 type, u32 length} and payload; all-gather is type
1), as an attacker on the path would. Prints "listening" once ready, and
"tampered" when it did.
"""
import socket
import struct
import sys
import threading
import time

ALLGATHER = 1


def main():
    listen_port, store_port, capture = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    tamper = len(sys.argv) > 4 and sys.argv[4] == "tamper"
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", listen_port))
    srv.listen(1)
    srv.settimeout(30)
    print("listening", flush=True)
    member, _ = srv.accept()
    for attempt in range(200):  # rank 0 may not listen yet
        try:
            store = socket.create_connection(("127.0.0.1", store_port))
            break
        except ConnectionRefusedError:
            if attempt == 199:
                raise
            time.sleep(0.05)
    out = open(capture, "ab")
    lock = threading.Lock()

    def record(data):
        with lock:
            out.write(data)
            out.flush()

    def member_to_store():
        while True:
            data = member.recv(65536)
            if not data:
                break
            record(data)
            store.sendall(data)
        store.shutdown(socket.SHUT_WR)

    def store_to_member():
        buf = b""
        need_nonce, done = True, not tamper
        while True:
            data = store.recv(65536)
            if not data:
                break
            record(data)
            if done:
                member.sendall(data)
                continue
            # parse frames until the first all-gather reply is whole, then flip a bit in it
            buf += data
            if need_nonce:
                if len(buf) < 32:
                    continue
                member.sendall(buf[:32])
                buf, need_nonce = buf[32:], False
            while len(buf) >= 8 and not done:
                typ, length = struct.unpack("<II", buf[:8])
                if len(buf) < 8 + length:
                    break
                frame = bytearray(buf[: 8 + length])
                if typ == ALLGATHER and length > 0:
                    frame[8 + length // 2] ^= 0x01
                    done = True
                    print("tampered", flush=True)
                member.sendall(bytes(frame))
                buf = buf[8 + length :]
            if done and buf:
                member.sendall(buf)
                buf = b""
        member.shutdown(socket.SHUT_WR)

    threads = [threading.Thread(target=f) for f in (member_to_store, store_to_member)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


if __name__ == "__main__":
    main()
