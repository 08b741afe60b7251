#!/usr/bin/env bash
# Builds the native library for every platform the jar ships, each needing no glibc newer than
# 2.17 (Debian 9+, Ubuntu 14.04+, RHEL/CentOS 7+, Amazon Linux 2):
#   target/x86_64-unknown-linux-gnu/release/libcheckpoint_surgeon.so
#   target/aarch64-unknown-linux-gnu/release/libcheckpoint_surgeon.so
# with cargo-zigbuild and zig (zig links against glibc 2.17 symbol stubs). Both come from PyPI
# (cargo-zigbuild 0.24.1, ziglang 0.17.1) and are installed once into
# ~/.cache/checkpoint-surgeon/zig when missing, with the aarch64 Rust target (rustup).
#   scripts/build-native.sh            build both libraries
#   scripts/build-native.sh --test-aarch64
#                                      also run the Rust tests for aarch64 under qemu-user
#                                      (Debian's qemu-user and libc6-arm64-cross, installed when missing)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -d "$HOME/.cargo/bin" ]; then export PATH="$HOME/.cargo/bin:$PATH"; fi

tools="${XDG_CACHE_HOME:-$HOME/.cache}/checkpoint-surgeon/zig"
if [ ! -x "$tools/bin/cargo-zigbuild" ] || [ ! -x "$tools/ziglang/zig" ]; then
    echo "installing cargo-zigbuild 0.24.1 and zig 0.17.1 (PyPI) into $tools" >&2
    rm -rf "$tools"
    python3 -m pip install --quiet --disable-pip-version-check --target "$tools" \
        'ziglang==0.17.1' 'cargo-zigbuild==0.24.1' >&2
fi
export CARGO_ZIGBUILD_ZIG_PATH="$tools/ziglang/zig"
export PATH="$tools/bin:$PATH"
if ! rustup target list --installed 2>/dev/null | grep -qx aarch64-unknown-linux-gnu; then
    rustup target add aarch64-unknown-linux-gnu >&2
fi

for target in x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu; do
    cargo-zigbuild zigbuild --release -p checkpoint-surgeon --target "$target.2.17"
done
# The Java tests' test-only natives (NativeTesting), a library of their own that no jar carries.
cargo-zigbuild zigbuild --release -p checkpoint-surgeon-testing --target x86_64-unknown-linux-gnu.2.17

if [ "${1:-}" = "--test-aarch64" ]; then
    if ! command -v qemu-aarch64 >/dev/null 2>&1 || [ ! -e /usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1 ]; then
        echo "installing qemu-user and libc6-arm64-cross (Debian)" >&2
        apt-get update >&2 && apt-get install -y qemu-user libc6-arm64-cross >&2
    fi
    export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64 -L /usr/aarch64-linux-gnu"
    cargo-zigbuild test --release -p checkpoint-surgeon --target aarch64-unknown-linux-gnu.2.17
fi
