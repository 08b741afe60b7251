# Sourced by test.sh and demo.sh: puts cargo on the PATH and installs Debian's gradle (4.4.1)
# when it is missing, so that a fresh machine needs no other setup.
if [ -d "$HOME/.cargo/bin" ]; then
    export PATH="$HOME/.cargo/bin:$PATH"
fi
if ! command -v gradle >/dev/null 2>&1; then
    echo "installing Debian's gradle" >&2
    if [ "$(id -u)" = 0 ]; then sudo=""; else sudo="sudo"; fi
    $sudo apt-get update && $sudo apt-get install -y gradle || { echo "could not install gradle" >&2; exit 1; }
fi
for tool in cargo java; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "$tool is missing: install Rust (rustup) and a JDK 17" >&2
        exit 1
    fi
done
