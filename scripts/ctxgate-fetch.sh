#!/usr/bin/env bash
# How the ctxgate Action (action.yml) gets its binary: the release's, checked
# against the release's SHA256SUMS, when the action is used at a version tag;
# built from source otherwise (a branch, a commit, or no asset for this
# runner). Two commands, each one step of the action:
#
#   ctxgate-fetch.sh plan       decide; write to $GITHUB_OUTPUT
#                                 key=ctxgate-OS-ARCH-<hash of the action's code>
#                                 tag=vX.Y.Z        (empty: build from source)
#                                 asset=ctxgate-vX.Y.Z-TARGET.tar.gz
#   ctxgate-fetch.sh download   download the asset and SHA256SUMS from the
#                               release, check the asset's sha256, install
#                               the binary as $CTXGATE_ROOT/bin/ctxgate;
#                               writes got=true, or got=false when the release
#                               cannot be reached (the action then builds).
#                               A checksum that does not match, or an asset
#                               SHA256SUMS does not list, fails (exit 1):
#                               never run a binary that was not verified.
#
# The cache key hashes the action's own files (action.yml, scripts/, src/,
# Cargo.toml, Cargo.lock), not the ref's name: a moved tag with new code is a
# new key, and the same code under two refs shares one.
#
# Settings, from the environment (the action passes them through `env:`):
#   CTXGATE_ACTION_REF         github.action_ref: v1, v1.2 or v1.2.3 (a
#                              version tag), else a branch or a SHA
#   CTXGATE_ACTION_REPOSITORY  github.action_repository (owner/name); empty
#                              (actions/runner#2473): Cargo.toml's repository
#   CTXGATE_TAG, CTXGATE_ASSET what `plan` wrote (download)
#   CTXGATE_ROOT               where the binary goes (download) [ctxgate-bin]
#   CTXGATE_RELEASES_URL       the releases' base URL, for a mirror or a test
#                              [https://github.com/OWNER/NAME/releases/download]
#   GITHUB_ACTION_PATH         the action's own checkout [this script's ../]
#   RUNNER_OS, RUNNER_ARCH     which binary (Linux|macOS|Windows, X64|ARM64)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
action_path=${GITHUB_ACTION_PATH:-$here}
out=${GITHUB_OUTPUT:-/dev/null}

# The download's temp folder goes, whatever the outcome: installed, refused
# (a checksum that does not match), unreachable, or the step cancelled.
tmp=''
cleanup() { if [ -n "$tmp" ]; then rm -rf -- "$tmp"; fi; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

sha256() {
  if command -v sha256sum > /dev/null; then
    sha256sum "$@" | cut -d' ' -f1
  else
    shasum -a 256 "$@" | cut -d' ' -f1
  fi
}

# The Rust target a release builds for this runner (empty: none).
target() {
  case "${RUNNER_OS:-}-${RUNNER_ARCH:-}" in
    Linux-X64) echo x86_64-unknown-linux-gnu ;;
    Linux-ARM64) echo aarch64-unknown-linux-gnu ;;
    macOS-X64) echo x86_64-apple-darwin ;;
    macOS-ARM64) echo aarch64-apple-darwin ;;
    Windows-X64) echo x86_64-pc-windows-msvc ;;
    *) echo '' ;;
  esac
}

cargo_field() {
  sed -n "s/^$1 = \"\\(.*\\)\"\$/\\1/p" "$action_path/Cargo.toml" | head -1
}

plan() {
  local hash ref version tag='' asset='' triple
  # Every file the binary or the action's behaviour comes from, in a fixed
  # order; the hash of their hashes (names included) is the key.
  hash=$(cd "$action_path" && for f in action.yml Cargo.toml Cargo.lock scripts src; do
    if [ -e "$f" ]; then find "$f" -type f; fi
  done | LC_ALL=C sort | while IFS= read -r f; do printf '%s  %s\n' "$(sha256 "$f")" "$f"; done | sha256)
  ref=${CTXGATE_ACTION_REF:-}
  version=$(cargo_field version)
  if [[ $ref =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
    tag=$ref
  elif [[ $ref =~ ^v[0-9]+(\.[0-9]+)?$ && "v$version" == "$ref".* ]]; then
    # A moving tag (v1, v1.2) names the newest release of that line, and the
    # code checked out at it says which one.
    tag=v$version
  fi
  triple=$(target)
  if [ -n "$tag" ] && [ -z "$triple" ]; then
    echo "ctxgate: no release binary for ${RUNNER_OS:-?}/${RUNNER_ARCH:-?}: building from source"
    tag=''
  fi
  [ -n "$tag" ] && asset="ctxgate-$tag-$triple.tar.gz"
  if [ -n "$tag" ]; then
    echo "ctxgate: the action is at release $tag: downloading $asset"
  else
    printf 'ctxgate: the action ref %q is not a version tag: building ctxgate from source\n' "$ref"
  fi
  {
    echo "key=ctxgate-${RUNNER_OS:-os}-${RUNNER_ARCH:-arch}-$hash"
    echo "tag=$tag"
    echo "asset=$asset"
  } >> "$out"
}

download() {
  local tag=${CTXGATE_TAG:-} asset=${CTXGATE_ASSET:-} root=${CTXGATE_ROOT:-ctxgate-bin}
  local repo=${CTXGATE_ACTION_REPOSITORY:-} base want got exe=''
  # Only what `plan` can write is used in a URL or a path.
  if ! [[ $tag =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ && $asset =~ ^ctxgate-v[0-9.]+-[a-z0-9_-]+\.tar\.gz$ ]]; then
    echo "ctxgate: no release to download: building from source"
    echo "got=false" >> "$out"
    return 0
  fi
  if ! [[ $repo =~ ^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$ ]]; then
    repo=$(cargo_field repository | sed -n 's#^https://github.com/\([^/]*/[^/]*\)$#\1#p')
  fi
  base=${CTXGATE_RELEASES_URL:-https://github.com/$repo/releases/download}
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/ctxgate-fetch.XXXXXX")
  for f in "$asset" SHA256SUMS; do
    if ! curl -fsSL --retry 3 -o "$tmp/$f" "$base/$tag/$f"; then
      echo "ctxgate: could not download $base/$tag/$f: building from source"
      echo "got=false" >> "$out"
      return 0
    fi
  done
  want=$(awk -v a="$asset" '$2 == a || $2 == "*" a { print $1 }' "$tmp/SHA256SUMS")
  got=$(sha256 "$tmp/$asset")
  if [ -z "$want" ]; then
    echo "::error title=ctxgate::$asset is not listed in the release's SHA256SUMS ($base/$tag/SHA256SUMS): not running an unverified binary"
    return 1
  fi
  if [ "$want" != "$got" ]; then
    echo "::error title=ctxgate::$asset has sha256 $got but the release's SHA256SUMS says $want: not running it"
    return 1
  fi
  echo "ctxgate: $asset: sha256 $got, as SHA256SUMS says"
  [ "${RUNNER_OS:-}" = Windows ] && exe=.exe
  # Extract from inside the folder: GNU tar reads `C:` in a path as a host.
  (cd "$tmp" && tar -xzf "$asset")
  mkdir -p "$root/bin"
  cp "$tmp/${asset%.tar.gz}/ctxgate$exe" "$root/bin/ctxgate$exe"
  chmod +x "$root/bin/ctxgate$exe"
  "$root/bin/ctxgate$exe" --version
  echo "got=true" >> "$out"
}

case "${1:-}" in
  plan) plan ;;
  download) download ;;
  *) echo "usage: ctxgate-fetch.sh plan|download" >&2; exit 2 ;;
esac
