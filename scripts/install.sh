#!/usr/bin/env bash
# Installs the prebuilt gitops-lint binary of a release, after checking the downloaded archive
# against the SHA-256 checksum published beside it. The GitHub Action runs it; it works the
# same by hand.
#
#   scripts/install.sh REF DIR
#
# REF is the ref this checkout was taken at: a release tag (v1.2.3), or a moving tag (v1, v1.2)
# that points at one, whose release is then the version in this checkout's Cargo.toml. DIR
# receives the `gitops-lint` binary.
#
# Exit status:
#   0  installed: DIR/gitops-lint is the verified binary and reports the release's version
#   3  there is no prebuilt binary to use: REF is a branch or a commit, or names another version
#      than this checkout, the release has no archive for this platform, or curl, tar or a
#      SHA-256 tool is missing. The caller builds from source instead.
#   1  any other failure, above all a checksum that does not match: nothing is installed, and
#      the caller must not fall back to anything else.
#
# Environment:
#   GITOPS_LINT_RELEASES    base URL of the release assets: tag T's are under
#                           $GITOPS_LINT_RELEASES/T/ (https:// or file://). Default:
#                           https://github.com/$GITOPS_LINT_REPOSITORY/releases/download
#   GITOPS_LINT_REPOSITORY  owner/name of the repository that publishes the releases
#   RUNNER_OS, RUNNER_ARCH  the platform as GitHub runners name it (uname when unset)
#   GITOPS_LINT_ARCHIVE_CACHE  a directory kept between runs (the Action's cache): a release
#                           archive found there is used only once it matches the checksum
#                           fetched from the release in this run, else it is replaced by a fresh
#                           download; a verified download is left there for the next run
#
# REF and the repository come from the workflow, not from the code under review; they are
# still only ever used as data (validated, quoted, never evaluated).
set -euo pipefail

usage() {
  echo "usage: $0 REF DIR" >&2
  exit 1
}
[ "$#" -eq 2 ] || usage
ref=$1
dir=$2
[ -n "$dir" ] || usage

say() {
  echo "gitops-lint install: $*" >&2
}
no_release() {
  say "$*; no prebuilt binary to install"
  exit 3
}
fail() {
  # A workflow command on stdout makes the runner show it as the step's error.
  if [ "${GITHUB_ACTIONS:-}" = true ]; then
    echo "::error::gitops-lint install: $*"
  fi
  say "error: $*"
  exit 1
}

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
version=$(awk -F'"' '/^\[/ { package = ($0 == "[package]") }
  package && /^version *=/ { print $2; exit }' "$here/Cargo.toml")
[ -n "$version" ] || fail "no package version in $here/Cargo.toml"

# Which release, if any, holds the binary built from this checkout.
if [[ $ref =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]; then
  if [ "$ref" != "v$version" ]; then
    no_release "$ref is not the version of this checkout ($version)"
  fi
  tag=$ref
elif [[ $ref =~ ^v[0-9]+(\.[0-9]+)?$ ]]; then
  case "v$version" in
    "$ref".*) ;;
    *) no_release "this checkout's version $version is not under $ref" ;;
  esac
  if [[ $version == *-* ]]; then
    no_release "$ref points at a pre-release ($version)"
  fi
  tag=v$version
elif [ -z "$ref" ]; then
  no_release "the ref is not known (a local action, or a runner that does not say)"
else
  no_release "$ref is a branch or a commit, not a release tag"
fi

os=${RUNNER_OS:-$(uname -s)}
arch=${RUNNER_ARCH:-$(uname -m)}
case "$os/$arch" in
  Linux/X64 | Linux/x86_64 | Linux/amd64) target=x86_64-unknown-linux-musl ;;
  Linux/ARM64 | Linux/aarch64 | Linux/arm64) target=aarch64-unknown-linux-musl ;;
  macOS/X64 | Darwin/x86_64) target=x86_64-apple-darwin ;;
  macOS/ARM64 | Darwin/arm64) target=aarch64-apple-darwin ;;
  *) no_release "no release archive is built for $os/$arch" ;;
esac

# shellcheck source=scripts/sha256.sh
. "$here/scripts/sha256.sh"

for program in curl tar; do
  command -v "$program" > /dev/null 2>&1 || no_release "$program is not installed"
done
sha256_tool || no_release "neither sha256sum nor shasum is installed"

if [ -n "${GITOPS_LINT_RELEASES:-}" ]; then
  base=${GITOPS_LINT_RELEASES%/}
elif [[ ${GITOPS_LINT_REPOSITORY:-} =~ ^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$ ]]; then
  base=https://github.com/$GITOPS_LINT_REPOSITORY/releases/download
else
  no_release "the repository that publishes the releases is not known"
fi

name=gitops-lint-$tag-$target
asset=$name.tar.gz
work=$(mktemp -d "${RUNNER_TEMP:-${TMPDIR:-/tmp}}/gitops-lint-install.XXXXXX")
trap 'rm -rf -- "$work"' EXIT

# fetch URL FILE: 0 fetched, 3 not there (HTTP 404, or a missing file:// file), 1 failed.
fetch() {
  local code status=0
  code=$(curl --proto '=https,file' --proto-redir '=https' --tlsv1.2 --fail --silent \
    --show-error --location --retry 3 --connect-timeout 20 --max-time 300 \
    --output "$2" --write-out '%{http_code}' "$1" 2> "$work/curl.err") || status=$?
  if [ "$status" -eq 0 ]; then
    return 0
  fi
  # curl exits 37 when a file:// URL names no file.
  if [ "$code" = 404 ] || [ "$status" -eq 37 ]; then
    return 3
  fi
  say "$(cat "$work/curl.err")"
  return 1
}

# The checksum comes from the release in every run, never from the cache: the cache is written
# by whatever runs in the job after the action, a pull request's code included.
cache=${GITOPS_LINT_ARCHIVE_CACHE:-}
status=0
fetch "$base/$tag/$asset.sha256" "$work/$asset.sha256" || status=$?
case $status in
  0) ;;
  # No checksum: is there a release at all? Without its archive, build; with it, fail below.
  3) sum_missing=1 ;;
  *) fail "downloading $base/$tag/$asset.sha256 failed" ;;
esac

# `HASH  NAME` (or `HASH *NAME`), as sha256sum writes it.
checked() {
  read -r expected listed < "$work/$asset.sha256" || true
  if ! [[ ${expected:-} =~ ^[0-9a-fA-F]{64}$ ]] || [ "${listed#\*}" != "$asset" ]; then
    fail "$asset.sha256 is not a SHA-256 checksum line for $asset"
  fi
  expected=$(printf '%s' "$expected" | tr 'A-F' 'a-f')
  actual=$(sha256_of "$1")
  [ "$actual" = "$expected" ]
}

have=
if [ -z "${sum_missing:-}" ] && [ -n "$cache" ] && [ -f "$cache/$asset" ] && [ ! -L "$cache/$asset" ]; then
  cp -- "$cache/$asset" "$work/$asset"
  if checked "$work/$asset"; then
    have=1
    say "using the cached $asset (SHA-256 $actual, as the release says)"
  else
    # A cache entry cannot be overwritten under its key: download again rather than fail
    # every run until it is evicted.
    if [ "${GITHUB_ACTIONS:-}" = true ]; then
      echo "::warning::gitops-lint install: the cached $asset does not match the release's checksum; it is not used"
    fi
    say "the cached $asset is $actual, the release's $asset.sha256 says $expected: not used, downloading it again"
    rm -f -- "$work/$asset"
  fi
fi
if [ -z "$have" ]; then
  status=0
  fetch "$base/$tag/$asset" "$work/$asset" || status=$?
  case $status in
    0) ;;
    3) no_release "release $tag has no $asset at $base/$tag/" ;;
    *) fail "downloading $base/$tag/$asset failed" ;;
  esac
  # From here on, the release exists: every problem is a failure, never a reason to build.
  [ -z "${sum_missing:-}" ] || fail "release $tag has $asset but its checksum $asset.sha256 could not be fetched"
  if ! checked "$work/$asset"; then
    fail "checksum mismatch for $asset: the release's $asset.sha256 says $expected, the download is $actual; not installed"
  fi
fi

mkdir "$work/unpacked"
if ! tar -xzf "$work/$asset" -C "$work/unpacked" "$name/gitops-lint" 2> "$work/tar.err"; then
  fail "$asset holds no $name/gitops-lint: $(cat "$work/tar.err")"
fi
bin=$work/unpacked/$name/gitops-lint
if [ -L "$bin" ] || [ ! -f "$bin" ]; then
  fail "$name/gitops-lint in $asset is not a regular file"
fi
chmod 755 "$bin"
reported=$("$bin" --version 2>&1) || fail "the downloaded gitops-lint does not run: $reported"
if [ "$reported" != "gitops-lint ${tag#v}" ]; then
  fail "the binary of $asset reports '$reported', not gitops-lint ${tag#v}"
fi

mkdir -p -- "$dir"
cp -- "$bin" "$dir/.gitops-lint.partial"
mv -f -- "$dir/.gitops-lint.partial" "$dir/gitops-lint"
if [ -n "$cache" ] && [ -z "$have" ]; then
  mkdir -p -- "$cache"
  rm -f -- "$cache/$asset"
  cp -- "$work/$asset" "$cache/$asset"
fi
say "installed $tag for $target (SHA-256 $actual) as $dir/gitops-lint"
