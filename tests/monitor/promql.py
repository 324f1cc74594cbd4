"""PromQL through Prometheus's HTTP API (/api/v1/query), for the monitor
tests: `query` returns a query's result vector; `wait_runs` waits until
Prometheus has scraped `runs` finished runs of each monitor and `want`
returns true for the answer to `series`, which it returns."""
import json
import sys
import time
import urllib.parse
import urllib.request


def query(port, q):
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": q})
    with urllib.request.urlopen(url, timeout=5) as r:
        doc = json.load(r)
    assert doc["status"] == "success", doc
    return doc["data"]["result"]


def wait_runs(port, runs, series, want, secs, monitors=1):
    """`runs` by each of `monitors` monitors (shards: the fewest counts)."""
    deadline = time.time() + secs
    while True:
        try:
            done = query(port, 'meshperf_monitor_runs_total{job="meshperf"}')
            least = min((float(d["value"][1]) for d in done), default=0)
            if len(done) == monitors and least >= runs:
                result = query(port, series)
                if want(result):
                    return least, result
        except OSError:
            pass  # Prometheus still starting
        if time.time() > deadline:
            sys.exit(f"no {runs} runs with the expected {series} through Prometheus within {secs} s")
        time.sleep(0.5)
