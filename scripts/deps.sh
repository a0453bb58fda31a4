#!/bin/sh
# deps.sh: installs the Debian packages tfm builds with, when they are missing
# (`make deps`). Quiet and quick when everything is there. `deps.sh plot`:
# what scripts/plot_log.sh needs instead (gnuplot, python3); `deps.sh mpi`:
# the build's packages and Open MPI (make MPI=1); `deps.sh browser`: what
# tests/cli_browser.sh drives (chromium, node, and playwright-core from npm
# into tests/browser/node_modules, without a browser download); `deps.sh spm`:
# sentencepiece's spm_train/spm_encode/spm_decode, that tests/cli_spm.sh
# compares tfm's SentencePiece encoding with; `deps.sh clients`: node and
# npm's LibreTranslate client, into tests/clients/node_modules, for
# tests/cli_serve.sh; `deps.sh test`: the build's packages and what the test
# scripts run (curl, python3, sentencepiece), as `make test` does first.
# `deps.sh --check [mpi]`: installs nothing; names what is missing and exits
# 1 (every build runs it once).
check=""
if [ "${1:-}" = --check ]; then check=1; shift; fi
missing=""
multiarch=$(cc -print-multiarch 2>/dev/null || dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null)
if [ "${1:-}" = mpi ]; then
    sh "$0" ${check:+--check} || exit 1     # the build's own packages first
    command -v mpirun >/dev/null 2>&1 || missing="$missing openmpi-bin"
    pkg-config --exists ompi-c 2>/dev/null || missing="$missing libopenmpi-dev"
elif [ "${1:-}" = test ]; then
    sh "$0" ${check:+--check} || exit 1     # the build's own packages first
    command -v curl >/dev/null 2>&1 || missing="$missing curl"
    [ -x /usr/bin/python3 ] || missing="$missing python3"
    command -v spm_train >/dev/null 2>&1 || missing="$missing sentencepiece"
elif [ "${1:-}" = clients ]; then
    command -v npm >/dev/null 2>&1 || missing="$missing nodejs npm"
elif [ "${1:-}" = browser ]; then
    [ -x /usr/bin/chromium ] || missing="$missing chromium"
    command -v npm >/dev/null 2>&1 || missing="$missing nodejs npm"
elif [ "${1:-}" = spm ]; then
    command -v spm_train >/dev/null 2>&1 || missing="$missing sentencepiece"
elif [ "${1:-}" = plot ]; then
    command -v gnuplot >/dev/null 2>&1 || missing="$missing gnuplot-nox"
    [ -x /usr/bin/python3 ] || command -v python3 >/dev/null 2>&1 || missing="$missing python3"
else
    pc() { command -v pkg-config >/dev/null 2>&1 && pkg-config --exists "$1"; }
    pc openblas || missing="$missing libopenblas-dev"
    pc libcjson || missing="$missing libcjson-dev"
    pc zlib || missing="$missing zlib1g-dev"
    pc libmicrohttpd || missing="$missing libmicrohttpd-dev"
    [ -e /usr/include/oneapi/dnnl/dnnl.h ] || missing="$missing libdnnl-dev"
    [ -e "/usr/lib/$multiarch/openblas-openmp/libopenblas.so.0" ] || \
        missing="$missing libopenblas0-openmp"
    command -v pkg-config >/dev/null 2>&1 || missing="$missing pkg-config"
    [ -n "$missing" ] && missing=" build-essential pkg-config$missing"
fi
if [ -n "$missing" ] && [ -n "$check" ]; then
    echo "tfm needs these Debian packages to build:$missing" >&2
    echo "install them with: make deps$([ "${1:-}" = mpi ] && echo " MPI=1")   (runs apt-get)" >&2
    exit 1
fi
if [ -n "$missing" ]; then
    echo "deps: installing$missing" >&2
    SUDO=""
    [ "$(id -u)" = 0 ] || SUDO="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq && $SUDO apt-get install -y -qq $missing >/dev/null || exit 1
fi
if [ "${1:-}" = browser ]; then
    dir=$(dirname "$0")/../tests/browser
    [ -d "$dir/node_modules/playwright-core" ] ||
        (cd "$dir" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error)
fi
if [ "${1:-}" = clients ]; then
    dir=$(dirname "$0")/../tests/clients
    [ -d "$dir/node_modules/libretranslate" ] ||
        (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
fi
