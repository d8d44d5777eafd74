#!/usr/bin/env bash
# Compile-checks (and lints) osprey-screen for macOS and Windows from Linux: every module but
# tools.rs, with the same dependency versions as the workspace (Cargo.lock is refreshed from it).
# Needs: rustup target add x86_64-pc-windows-gnu x86_64-apple-darwin; for Windows also
# apt-get install gcc-mingw-w64-x86-64 (some dependencies compile C). Nothing is linked or run.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../../.." && pwd)"
cp "$root/Cargo.lock" "$here/Cargo.lock"
cd "$here"
for target in x86_64-pc-windows-gnu x86_64-apple-darwin; do
  echo "check-screen-platforms: $target" >&2
  cargo clippy --target "$target" --target-dir "${CARGO_TARGET_DIR:-$root/target}" -- -D warnings
done
