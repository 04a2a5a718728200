#!/usr/bin/env bash
# Installs everything the project needs on a fresh Debian machine: system packages, then a
# virtual environment with the project and its extras. Safe to run again (it skips what is there).
# Usage: scripts/setup.sh [extra ...]   (extras from pyproject, e.g. test, bench)
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(python3 python3-venv python3-dev gcc ${IDP_APT_PACKAGES:-})
# The test extra drives JavaScript libraries (tests/js) with npm; Debian's Node.js where there is none.
if [[ " $* " == *" test "* ]] && ! command -v npm >/dev/null; then
  APT_PACKAGES+=(nodejs npm)
fi
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  echo "setup: installing Debian packages: ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || {
      echo "setup: installing the Debian packages ${missing[*]} needs root, and sudo is not installed: run this as root, or have root run: apt-get install ${missing[*]}" >&2
      exit 1
    }
    echo "setup: installing Debian packages needs root: asking sudo"
    SUDO="sudo"
  fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The distribution's CPython, which Debian builds with profile-guided and link-time optimisation:
# about a fifth less CPU per request than a build without them, such as pyenv's default
# (docs/decisions/0044-interpreter.md). PYTHON overrides; another 3.11+ on PATH if it is older.
PY=${PYTHON:-/usr/bin/python3}
"$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null || PY=python3
[ -x .venv/bin/python ] || "$PY" -m venv .venv
# The stamp names pyproject.toml and this script by hash and lists the extras installed with them:
# a request for some of those installs nothing (scripts/dev.sh after scripts/test.sh); another
# extra is installed beside them; a changed pyproject.toml or script installs anew.
stamp=".venv/.installed-$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)"
installed=$(cat "$stamp" 2>/dev/null || true)
wanted=$(printf '%s\n' $installed "$@" | sed '/^$/d' | sort -u)
if [ ! -f "$stamp" ] || [ "$wanted" != "$installed" ]; then
  extras=$(echo $wanted | tr ' ' ,)
  spec="."; [ -n "$extras" ] && spec=".[$extras]"
  echo "setup: installing Python packages ($spec)"
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -e "$spec"
  # Argon2's C library (argon2-cffi-bindings): the published wheel stays installed, whose SSE2 code
  # every x86-64 CPU runs. Beside it, in .venv/argon2, builds for the AVX2 and AVX-512 this CPU has,
  # about half the CPU per password check, in the order scripts/argon2_builds.py measures (AVX-512
  # first only where it hashes clearly faster). Each process loads the first its own CPU has, else
  # the published one (realms/credentials/argon2_build.py, which the .pth file imports at every start of the
  # venv's Python, before anything imports argon2): a venv or image built here runs on any x86-64
  # machine (decision 0058). The wheel is reinstalled over an earlier setup's own build. The
  # builds are not taken from pip's wheel cache, which does not tell builds with other CFLAGS
  # apart. -O2 named: a Python whose own build flags carry none (pyenv's) compiled the
  # setuptools-built releases before 26 unoptimised, some 25 times slower; 26's CMake build adds
  # -O3 after it.
  if [ "$(uname -m)" = x86_64 ]; then
    version=$(.venv/bin/python -c 'import importlib.metadata as m; print(m.version("argon2-cffi-bindings"))')
    .venv/bin/pip install -q --force-reinstall --no-deps --only-binary argon2-cffi-bindings \
      "argon2-cffi-bindings==$version"
    rm -rf .venv/argon2
    builds=$(mktemp -d); units=()
    for unit in avx2 avx512f; do  # the first is the default
      grep -qw "$unit" /proc/cpuinfo || continue
      echo "setup: building Argon2 for $unit"
      CFLAGS="-O2 -m$unit" ARGON2_CFFI_USE_SSE2=1 .venv/bin/pip wheel -q --no-deps --no-cache-dir \
        --no-binary argon2-cffi-bindings "argon2-cffi-bindings==$version" -w "$builds/$unit"
      units+=("$builds/$unit")
    done
    if ((${#units[@]})); then
      .venv/bin/python scripts/argon2_builds.py .venv/argon2 "${units[@]}"  # stops at a wrong hash
    fi
    rm -rf "$builds"
  fi
  # Named to come after the editable install's .pth, whose path entry it needs: site reads them in
  # name order.
  echo "import realms.credentials.argon2_build" \
    >"$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/service_identity-argon2.pth"
  rm -f .venv/.installed-*; echo "$wanted" >"$stamp"
fi

# The JavaScript libraries the tests drive (keycloak-js, Keycloak's admin client), pinned by
# tests/js/package-lock.json.
if [[ " $* " == *" test "* ]]; then
  js_stamp="tests/js/node_modules/.installed-$(sha256sum tests/js/package-lock.json | cut -c1-16)"
  if [ ! -f "$js_stamp" ]; then
    echo "setup: installing JavaScript test packages (tests/js)"
    (cd tests/js && npm ci --no-audit --no-fund --loglevel=error >/dev/null)  # errors still on stderr
    touch "$js_stamp"
  fi
fi
