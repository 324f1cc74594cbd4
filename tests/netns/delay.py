"""A delay line for tests/netns/lul.sh (no netem on this kernel): every
packet iptables sends to NFQUEUE queue N is held D ms, then accepted, in
arrival order. Usage: delay.py QUEUE DELAY_MS. Runs until killed."""
import collections
import sys
import threading
import time

from netfilterqueue import NetfilterQueue

queue_num, delay = int(sys.argv[1]), float(sys.argv[2]) / 1e3
held = collections.deque()
ready = threading.Condition()


def hold(pkt):
    # The verdict comes from the releasing thread, D after arrival.
    with ready:
        held.append((time.monotonic() + delay, pkt))
        ready.notify()


def release():
    while True:
        with ready:
            while not held:
                ready.wait()
            due, pkt = held[0]
        left = due - time.monotonic()
        if left > 0:
            time.sleep(left)
            continue
        with ready:
            held.popleft()
        pkt.accept()


threading.Thread(target=release, daemon=True).start()
q = NetfilterQueue()
q.bind(queue_num, hold)
print("delay line ready", flush=True)
try:
    q.run()
finally:
    q.unbind()
