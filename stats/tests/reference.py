#!/usr/bin/env python3
"""Independent reference values for the meshperf-stats statistics tests.

Writes fixtures/reference.json, read by tests/reference.rs. Moments are exact
(fractions.Fraction over the stored doubles), quantiles come from numpy's
default "linear" percentile method, t quantiles from scipy.stats, the line
fit from numpy.polyfit, and the UDP counts from a plain set-based
re-implementation of the definitions in src/udp.rs.

Run from the repository root:  python3 stats/tests/reference.py
Needs numpy and scipy (pip install numpy scipy).
"""
import json
import math
import os
from fractions import Fraction

import numpy as np
from scipy import stats as sst

MASK = (1 << 64) - 1


def lcg(seed, n):
    """Uniform doubles in [0, 1): 64-bit MMIX LCG, top 53 bits.
    Identical to `Lcg` in tests/reference.rs."""
    s = seed & MASK
    out = []
    for _ in range(n):
        s = (s * 6364136223846793005 + 1442695040888963407) & MASK
        out.append((s >> 11) / float(1 << 53))
    return out


def generate(spec):
    us = lcg(spec["seed"], spec["n"])
    if spec["kind"] == "cube":  # skewed, latency-like
        return [20.0 + 1000.0 * u * u * u for u in us]
    if spec["kind"] == "large":  # ns timestamps around 1e12
        return [1e12 + 1000.0 * u for u in us]
    if spec["kind"] == "uniform":
        return [10.0 + u for u in us]
    raise ValueError(spec["kind"])


def summary(xs):
    n = len(xs)
    fr = [Fraction(x) for x in xs]
    mean = sum(fr) / n
    m2 = sum((x - mean) ** 2 for x in fr) / n
    m3 = sum((x - mean) ** 3 for x in fr) / n
    m4 = sum((x - mean) ** 4 for x in fr) / n
    if m2 == 0:
        sigma = skew = kurt = 0.0
    else:
        sigma = math.sqrt(m2)
        skew = float(m3 / m2) / math.sqrt(m2)
        kurt = float(m4 / (m2 * m2)) - 3.0
    a = np.array(xs, dtype=np.float64)
    q = np.percentile(a, [25, 50, 75, 90, 99, 99.9, 99.99])  # method="linear"
    med = float(np.median(a))
    return {
        "n": n, "min": float(min(xs)), "max": float(max(xs)), "mean": float(mean),
        "sigma": sigma, "skew": skew, "kurtosis": kurt, "median": med,
        "iq25": float(q[0]), "iq75": float(q[2]), "p90": float(q[3]), "p99": float(q[4]),
        "p999": float(q[5]), "p9999": float(q[6]),
        "mad": float(np.median(np.abs(a - med))),
    }


def histogram(xs, w, low, high=None, bins=None):
    if bins is None:
        bins = math.ceil(Fraction(high - low) / Fraction(w))
    counts = [0] * bins
    under = over = 0
    for x in xs:
        if x < low:
            under += 1
            continue
        i = math.floor((Fraction(x) - Fraction(low)) / Fraction(w))
        if i >= bins:
            over += 1
        else:
            counts[i] += 1
    return {"counts": counts, "underflow": under, "overflow": over}


def udp_case(seed, sent):
    """A receive record with loss, reordering and duplicates."""
    us = iter(lcg(seed, 10 * sent))
    order = []
    i = 0
    while i < sent:
        u = next(us)
        if u < 0.01:  # lost
            i += 1
            continue
        if u < 0.015 and i + 1 < sent:  # swapped with the next one
            order += [i + 1, i]
            i += 2
            continue
        order.append(i)
        if u > 0.997:  # duplicated
            order.append(i)
        i += 1
    send = [10**15 + 10_000 * s for s in order]
    arrival, t = [], 10**15 + 50_000
    for s in order:
        t = max(t + 1_000, 10**15 + 10_000 * s + 50_000 + int(next(us) * 20_000))
        arrival.append(t)
    # expected values straight from the definitions
    seen, highest, dup, ooo = set(), None, 0, 0
    for s in order:
        if s in seen:
            dup += 1
            continue
        seen.add(s)
        if highest is not None and s < highest:
            ooo += 1
        else:
            highest = s
    j = Fraction(0)
    for k in range(1, len(order)):
        d = abs((arrival[k] - arrival[k - 1]) - (send[k] - send[k - 1]))
        j += (d - j) / 16
    gaps = [(arrival[k] - arrival[k - 1]) / 1e3 for k in range(1, len(order))]
    return {
        "seq": order, "arrival_ns": arrival, "send_ns": send, "sent": sent,
        "expected": {
            "packets": len(order), "expected": sent, "received": len(seen),
            "lost": sent - len(seen), "out_of_order": ooo, "duplicates": dup,
            "recv_seconds": (arrival[-1] - arrival[0]) / 1e9,
            "jitter_us": float(j) / 1e3, "interarrival_us": summary(gaps),
        },
    }


def main():
    datasets = {
        "n1": {"values": [42.5]},
        "all_equal": {"values": [0.1] * 5},
        "small_skewed": {"values": [1.0, 2.0, 2.0, 3.0, 3.0, 3.0, 4.0, 10.0, 50.0, 200.0]},
        "large_1e12": {"lcg": {"seed": 7, "n": 6000, "kind": "large"}},  # > 4096: radix path
        "lcg_10k": {"lcg": {"seed": 12345, "n": 10000, "kind": "cube"}},
    }
    for d in datasets.values():
        xs = d["values"] if "values" in d else generate(d["lcg"])
        d["check"] = {"first": xs[:3], "sum": float(sum(Fraction(x) for x in xs))}
        d["summary"] = summary(xs)
        d["_xs"] = xs
    lcg10k = datasets["lcg_10k"]["_xs"]
    hists = [
        dict(dataset="lcg_10k", bin_width=25.0, low=100.0, high=900.0),
        dict(dataset="lcg_10k", bin_width=7.5, low=0.0, bins=50),
        dict(dataset="small_skewed", bin_width=1.0, low=2.0, high=5.0),
    ]
    for h in hists:
        xs = datasets[h["dataset"]]["_xs"]
        h["expected"] = histogram(xs, h["bin_width"], h["low"], h.get("high"), h.get("bins"))
    srt = sorted(lcg10k)
    m, n = 101, len(srt)
    idx = [(k * (n - 1) + (m - 1) // 2) // (m - 1) for k in range(m)]
    cdf = {"dataset": "lcg_10k", "max_points": m,
           "x": [srt[i] for i in idx], "fraction": [(i + 1) / n for i in idx]}
    # latency vs size: 5 us + 0.01 us/byte with noise
    xs = [float(2**k) for k in range(17)]
    noise = lcg(99, len(xs))
    ys = [5.0 + 0.01 * x + (u - 0.5) for x, u in zip(xs, noise)]
    slope, intercept = np.polyfit(xs, ys, 1)
    r = np.corrcoef(xs, ys)[0, 1]
    fits = [
        {"x": xs, "y": ys, "slope": float(slope), "intercept": float(intercept), "r2": float(r * r)},
        {"x": [1.0, 2.0, 3.0], "y": [7.0, 9.0, 11.0], "slope": 2.0, "intercept": 5.0, "r2": 1.0},
    ]
    confs = []
    for vals in ([10.1, 9.8, 10.4, 10.0, 9.9], generate({"seed": 5, "n": 40, "kind": "uniform"})):
        a = np.array(vals)
        sd = float(np.std(a, ddof=1))
        hw = float(sst.t.ppf(0.975, len(vals) - 1)) * sd / math.sqrt(len(vals))
        confs.append({"values": vals, "mean": float(np.mean(a)), "sd": sd, "half_width": hw})
    for d in datasets.values():
        del d["_xs"]
    out = {
        "generator": "stats/tests/reference.py (numpy %s, scipy)" % np.__version__,
        "datasets": datasets, "histograms": hists, "cdf": cdf,
        "linfit": fits, "confidence": confs, "udp": [udp_case(3, 2000)],
    }
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "reference.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print("wrote", path)


if __name__ == "__main__":
    main()
