#!/usr/bin/env bash
# Installs a minimal stable Rust toolchain with rustup-init, the installer binary the Rust
# project publishes, checked against the SHA-256 checksum published beside it before it runs.
# The Action's build fallback uses it on a runner without cargo or rustup; no downloaded script
# is ever run.
#
#   scripts/install-rust.sh
#
# Exit status: 0 installed (cargo is then in ${CARGO_HOME:-$HOME/.cargo}/bin); 1 anything else,
# above all a checksum that does not match: nothing is run.
#
# Environment:
#   GITOPS_LINT_RUSTUP_DIST  base URL of rustup-init (https:// or file://), for a mirror:
#                            TARGET/rustup-init is under it. Default:
#                            https://static.rust-lang.org/rustup/dist
#   RUNNER_OS, RUNNER_ARCH   the platform as GitHub runners name it (uname when unset)
set -euo pipefail

fail() {
  if [ "${GITHUB_ACTIONS:-}" = true ]; then
    echo "::error::gitops-lint install-rust: $*"
  fi
  echo "gitops-lint install-rust: error: $*" >&2
  exit 1
}

# The Rust targets rustup-init is published for, as the runner names its platform.
os=${RUNNER_OS:-$(uname -s)}
arch=${RUNNER_ARCH:-$(uname -m)}
case "$os/$arch" in
  Linux/X64 | Linux/x86_64 | Linux/amd64) target=x86_64-unknown-linux-gnu ;;
  Linux/ARM64 | Linux/aarch64 | Linux/arm64) target=aarch64-unknown-linux-gnu ;;
  macOS/X64 | Darwin/x86_64) target=x86_64-apple-darwin ;;
  macOS/ARM64 | Darwin/arm64) target=aarch64-apple-darwin ;;
  *) fail "no rustup-init is known for $os/$arch; install Rust before this step" ;;
esac
# shellcheck source=scripts/sha256.sh
. "$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)/sha256.sh"
command -v curl > /dev/null 2>&1 || fail "curl is not installed"
sha256_tool || fail "neither sha256sum nor shasum is installed"

base=${GITOPS_LINT_RUSTUP_DIST:-https://static.rust-lang.org/rustup/dist}
base=${base%/}
work=$(mktemp -d "${RUNNER_TEMP:-${TMPDIR:-/tmp}}/gitops-lint-rustup.XXXXXX")
trap 'rm -rf -- "$work"' EXIT

for file in rustup-init rustup-init.sha256; do
  curl --proto '=https,file' --proto-redir '=https' --tlsv1.2 --fail --silent --show-error \
    --location --retry 3 --connect-timeout 20 --max-time 300 \
    --output "$work/$file" "$base/$target/$file" || fail "downloading $base/$target/$file failed"
done
# `HASH *NAME` or `HASH  NAME`; the name is the path it was published under.
read -r expected _ < "$work/rustup-init.sha256" || true
[[ ${expected:-} =~ ^[0-9a-fA-F]{64}$ ]] || fail "rustup-init.sha256 is not a SHA-256 checksum line"
expected=$(printf '%s' "$expected" | tr 'A-F' 'a-f')
actual=$(sha256_of "$work/rustup-init")
if [ "$actual" != "$expected" ]; then
  fail "checksum mismatch for rustup-init: $base/$target/rustup-init.sha256 says $expected, the download is $actual; not run"
fi
chmod 755 "$work/rustup-init"
"$work/rustup-init" -y --profile minimal --default-toolchain stable --no-modify-path
