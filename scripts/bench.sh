#!/usr/bin/env bash
# npm run bench: side-by-side figures against peer tools (DESIGN.md,
# "Performance targets"). Planned; nothing is measured yet.
set -euo pipefail
SCRIPT_NAME=bench
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
die "not implemented yet: the side-by-side benchmark (meshperf vs iperf3/netperf/sockperf) is planned"
