"""A made-up router forging ICMP errors against meshperf's UDP flows
(tests/netns/icmp.sh, root, in the router namespace).

Watches the IPv4 UDP datagrams on every interface (AF_PACKET, both ways)
to or from PORT (the serving agent's data port) and, for every flow seen in
the last 3 seconds, sends its sender an ICMP error every GAP_MS from FAKE, an
address on no link, quoting the datagram's IP header and only the 8 bytes
of its UDP header (what RFC 792 asks for, and all anyone needs who knows
or guesses the 4-tuple). The errors take turns: port unreachable, host
unreachable, host administratively prohibited, network unknown,
fragmentation needed (next-hop MTU 1280) and time exceeded.

Runs SECONDS, then prints how many it forged; a line per new flow as it
finds it.
"""

import signal
import socket
import struct
import sys
import time

KINDS = [(3, 3, 0), (3, 1, 0), (3, 13, 0), (3, 6, 0), (3, 4, 1280), (11, 0, 0)]


def checksum(b: bytes) -> int:
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def forged(fake: bytes, to: bytes, kind: tuple, quote: bytes) -> bytes:
    ty, code, mtu = kind
    rest = struct.pack("!HH", 0, mtu)
    icmp = struct.pack("!BBH", ty, code, 0) + rest + quote
    icmp = icmp[:2] + struct.pack("!H", checksum(icmp)) + icmp[4:]
    # IP header: the kernel fills in the checksum and the id (IP_HDRINCL).
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(icmp), 0, 0, 64, 1, 0, fake, to)
    return ip + icmp


def main() -> None:
    port, fake, gap, seconds = int(sys.argv[1]), sys.argv[2], float(sys.argv[3]) / 1e3, float(sys.argv[4])
    fake_b = socket.inet_aton(fake)
    sniff = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(0x0800))
    sniff.settimeout(gap / 2)
    raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    flows = {}  # (src, dst, sport, dport) -> [quote, last seen, last forged]
    forged_n, turn = 0, 0
    end = time.monotonic() + seconds
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    while time.monotonic() < end and not stop:
        try:
            pkt = sniff.recv(65535)
        except socket.timeout:
            pkt = b""
        now = time.monotonic()
        if len(pkt) >= 20 and pkt[0] >> 4 == 4 and pkt[9] == 17:
            ihl = (pkt[0] & 15) * 4
            if len(pkt) >= ihl + 8:
                sport, dport = struct.unpack("!HH", pkt[ihl:ihl + 4])
                if port in (sport, dport):
                    key = (pkt[12:16], pkt[16:20], sport, dport)
                    if key not in flows:
                        print(f"flow {socket.inet_ntoa(key[0])}:{sport} -> {socket.inet_ntoa(key[1])}:{dport}", flush=True)
                        flows[key] = [b"", 0.0, 0.0]
                    f = flows[key]
                    f[0], f[1] = pkt[:ihl + 8], now
        for key, f in list(flows.items()):
            if now - f[1] > 3.0:
                del flows[key]
            elif now - f[2] >= gap:
                try:
                    raw.sendto(forged(fake_b, key[0], KINDS[turn % len(KINDS)], f[0]), (socket.inet_ntoa(key[0]), 0))
                    forged_n += 1
                except OSError as e:
                    print(f"cannot send: {e}", flush=True)
                f[2] = now
                turn += 1
    print(f"forged {forged_n} ICMP errors", flush=True)


if __name__ == "__main__":
    main()
