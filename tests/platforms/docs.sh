#!/usr/bin/env bash
# The man pages and shell completions (issue 23 part 4), rendered by
# agent/examples/meshperf-docs.rs from the clap definitions the binary
# parses (agent/src/cli.rs), checked against the real binary:
#   - meshperf.1 and one page per subcommand (agent, run, monitor), bash,
#     zsh and fish completions are written;
#   - each subcommand's page, rendered by groff, names exactly the flags its
#     `meshperf SUB --help` prints, no more, no fewer;
#   - the bash completion, sourced into bash and called as bash calls it on
#     <Tab>, completes "meshperf ag" to "agent", offers every subcommand after
#     "meshperf ", and "meshperf agent --token" to --token and --token-file.
# $MESHPERF_BIN (default target/test-release/meshperf) is the binary; the
# generator is built in the same profile ($MESHPERF_PROFILE, test-release).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
fail() { echo "docs: FAILED: $*" >&2; exit 1; }
profile=${MESHPERF_PROFILE:-test-release}
bin=${MESHPERF_BIN:-$root/target/$profile/meshperf}
gen=${CARGO_TARGET_DIR:-$root/target}/$profile/examples/meshperf-docs
[ -x "$bin" ] || fail "$bin is missing: run scripts/build.sh"
command -v groff >/dev/null || fail "groff is not installed (apt-get install groff-base)"
t0=$SECONDS
cargo build -q --profile "$profile" -p meshperf-agent --example meshperf-docs || fail "cannot build the example meshperf-docs"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$gen" man "$tmp/man" || fail "meshperf-docs man"
"$gen" completions "$tmp/completions" || fail "meshperf-docs completions"
[ "$(cd "$tmp/man" && ls | tr '\n' ' ')" = "meshperf-agent.1 meshperf-monitor.1 meshperf-run.1 meshperf.1 " ] \
  || fail "man pages: $(ls "$tmp/man" | tr '\n' ' ')"
[ "$(cd "$tmp/completions" && ls | tr '\n' ' ')" = "_meshperf meshperf.bash meshperf.fish " ] \
  || fail "completions: $(ls "$tmp/completions" | tr '\n' ' ')"
# Bad input: one line naming what to do.
err=$("$gen" pages "$tmp/x" 2>&1) && fail "meshperf-docs accepted 'pages'"
[ "$err" = "meshperf-docs: $tmp/x: unknown output 'pages' (usage: meshperf-docs man|completions DIR)" ] || fail "meshperf-docs pages: $err"

flags() { grep -oE -- '(^|[^a-z0-9-])--[a-z0-9][a-z0-9-]*' | grep -oE -- '--[a-z0-9-]+' | sort -u; }
for sub in agent run monitor; do
  want=$("$bin" "$sub" --help | flags)
  [ "$(wc -l <<<"$want")" -gt 3 ] || fail "meshperf $sub --help names only: $want"
  # Rendered as man renders it, wide and unhyphenated, so no flag is split.
  page=$(groff -t -mandoc -Tascii -rLL=250n -rHY=0 "$tmp/man/meshperf-$sub.1" 2>"$tmp/groff.err" | col -b)
  [ ! -s "$tmp/groff.err" ] || fail "groff warns on meshperf-$sub.1: $(cat "$tmp/groff.err")"
  have=$(flags <<<"$page")
  [ "$want" = "$have" ] || fail "meshperf-$sub.1 and 'meshperf $sub --help' differ: $(diff <(echo "$want") <(echo "$have") | grep '^[<>]' | tr '\n' ' ')"
  echo "docs: meshperf-$sub.1 names the $(wc -l <<<"$want") flags of 'meshperf $sub --help'"
done
main_page=$(groff -t -mandoc -Tascii -rLL=250n -rHY=0 "$tmp/man/meshperf.1" | col -b)
for sub in agent run monitor; do
  grep -qE "meshperf-$sub\(1\)" <<<"$main_page" || fail "meshperf.1 does not point to meshperf-$sub(1)"
done

# complete WORDS...: what the bash completion offers for the last word, as
# bash calls the function on <Tab> (command, current word, previous word).
complete_bash() {
  bash --norc --noprofile -c '
    source "$1"; shift
    COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
    _meshperf meshperf "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
    printf "%s\n" "${COMPREPLY[@]}" | sort' _ "$tmp/completions/meshperf.bash" "$@"
}
got=$(complete_bash meshperf ag)
[ "$got" = agent ] || fail "bash: 'meshperf ag<Tab>' gives '$got', not 'agent'"
got=$(complete_bash meshperf "" | tr '\n' ' ')
for sub in agent run monitor help; do [[ " $got" == *" $sub "* ]] || fail "bash: 'meshperf <Tab>' lacks $sub: $got"; done
got=$(complete_bash meshperf agent --token | tr '\n' ' ')
[ "$got" = "--token --token-file " ] || fail "bash: 'meshperf agent --token<Tab>' gives '$got'"
grep -q 'complete -c meshperf' "$tmp/completions/meshperf.fish" || fail "meshperf.fish completes no meshperf"
head -1 "$tmp/completions/_meshperf" | grep -qx '#compdef meshperf' || fail "_meshperf is not a zsh completion for meshperf"
echo "docs: ok (4 man pages, bash completes subcommands and flags, zsh and fish written; $((SECONDS - t0)) s)"
