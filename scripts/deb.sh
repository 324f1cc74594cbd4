#!/usr/bin/env bash
# The Debian package, with dpkg-deb alone (no cargo-deb to build, no
# debhelper): scripts/release.sh runs it for each static binary.
#
#   scripts/deb.sh BINARY ARCH DOCS OUT.deb
#
# BINARY: a static meshperf (it needs no libraries, so the package depends on
# nothing, and tells lintian it is static on purpose); ARCH: amd64 or arm64;
# DOCS: what agent/examples/meshperf-docs.rs wrote (DOCS/man/*.1,
# DOCS/completions/{meshperf.bash,_meshperf,meshperf.fish}).
# The package (deploy/debian/: control, postinst, postrm, copyright):
#   /usr/bin/meshperf
#   /lib/systemd/system/meshperf-agent.service   deploy/systemd's unit, ExecStart /usr/bin/meshperf
#   /usr/share/man/man1/meshperf*.1.gz
#   /usr/share/bash-completion/completions/meshperf, zsh vendor-completions, fish vendor_completions.d
#   /usr/share/doc/meshperf/{copyright,changelog.gz}
#   /usr/share/lintian/overrides/meshperf          statically-linked-binary: on purpose
# postinst writes /etc/meshperf/agent.env (MESHPERF_TOKEN, 0600) with a
# fresh token unless one is there; purge removes it.
set -euo pipefail
SCRIPT_NAME=deb
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[ $# -eq 4 ] || die "usage: scripts/deb.sh BINARY ARCH DOCS OUT.deb"
bin=$1 arch=$2 docs=$3 deb=$(realpath -m "$4")
case "$arch" in amd64|arm64) ;; *) die "ARCH must be amd64 or arm64, not '$arch'" ;; esac
[ -x "$bin" ] || die "$bin is not an executable"
[ -f "$docs/man/meshperf.1" ] && [ -f "$docs/completions/meshperf.bash" ] \
  || die "$docs lacks man/meshperf.1 or completions/meshperf.bash (agent/examples/meshperf-docs.rs writes them)"
command -v dpkg-deb >/dev/null || die "dpkg-deb is not installed (apt-get install dpkg)"
version=$(awk -F'"' '/^\[workspace.package\]/ { w = 1 } w && /^version = / { print $2; exit }' "$ROOT/Cargo.toml")
[ -n "$version" ] || die "no workspace version in Cargo.toml"
maintainer=$(sed -n 's/^Maintainer: //p' "$ROOT/deploy/debian/control")
# Reproducible: every time and mtime is the last commit's.
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$ROOT" log -1 --format=%ct 2>/dev/null || date +%s)}
export SOURCE_DATE_EPOCH

pkg=$(mktemp -d)
trap 'rm -rf "$pkg"' EXIT
install -D -m 0755 "$bin" "$pkg/usr/bin/meshperf"
install -d "$pkg/lib/systemd/system"
sed -e 's#/usr/local/bin/meshperf#/usr/bin/meshperf#g' \
    -e 's#^\# /etc/systemd/system/meshperf-agent.service:#\# /lib/systemd/system/meshperf-agent.service (package meshperf):#' \
    -e '/^#   /d' \
    "$ROOT/deploy/systemd/meshperf-agent.service" >"$pkg/lib/systemd/system/meshperf-agent.service"
grep -qx 'ExecStart=/usr/bin/meshperf agent .*' "$pkg/lib/systemd/system/meshperf-agent.service" \
  || die "deploy/systemd/meshperf-agent.service: no ExecStart=/usr/local/bin/meshperf agent line to point at /usr/bin"
chmod 0644 "$pkg/lib/systemd/system/meshperf-agent.service"
install -d "$pkg/usr/share/man/man1"
for page in "$docs"/man/*.1; do
  gzip -9n <"$page" >"$pkg/usr/share/man/man1/$(basename "$page").gz"
done
install -D -m 0644 "$docs/completions/meshperf.bash" "$pkg/usr/share/bash-completion/completions/meshperf"
install -D -m 0644 "$docs/completions/_meshperf" "$pkg/usr/share/zsh/vendor-completions/_meshperf"
install -D -m 0644 "$docs/completions/meshperf.fish" "$pkg/usr/share/fish/vendor_completions.d/meshperf.fish"
install -D -m 0644 "$ROOT/deploy/debian/copyright" "$pkg/usr/share/doc/meshperf/copyright"
install -D -m 0644 "$ROOT/deploy/debian/lintian-overrides" "$pkg/usr/share/lintian/overrides/meshperf"
printf 'meshperf (%s) unstable; urgency=medium\n\n  * Release %s, built by scripts/release.sh.\n\n -- %s  %s\n' \
  "$version" "$version" "$maintainer" "$(date -R -u -d "@$SOURCE_DATE_EPOCH")" \
  | gzip -9n >"$pkg/usr/share/doc/meshperf/changelog.gz"
chmod 0644 "$pkg/usr/share/doc/meshperf/changelog.gz"

install -d "$pkg/DEBIAN"
install -m 0755 "$ROOT/deploy/debian/postinst" "$ROOT/deploy/debian/postrm" "$pkg/DEBIAN/"
size=$(du -sk --exclude=DEBIAN "$pkg" | cut -f1)
sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" -e "s/@SIZE@/$size/" "$ROOT/deploy/debian/control" >"$pkg/DEBIAN/control"
(cd "$pkg" && find . -path ./DEBIAN -prune -o -type f -printf '%P\n' | LC_ALL=C sort | xargs md5sum >DEBIAN/md5sums)
chmod 0644 "$pkg/DEBIAN/control" "$pkg/DEBIAN/md5sums"
find "$pkg" -type d -exec chmod 0755 {} +
find "$pkg" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
mkdir -p "$(dirname "$deb")"
dpkg-deb --root-owner-group -Zxz --build "$pkg" "$deb" >/dev/null
log "$(basename "$deb"): meshperf $version $arch, $(wc -c <"$deb") bytes"
