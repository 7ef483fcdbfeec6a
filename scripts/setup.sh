#!/usr/bin/env bash
# Everything a fresh machine needs, idempotent: Node dependencies and the build; with --test also the Python
# test environment (hydra-core + omegaconf + the verl releases the conformance test composes against).
# Each step records a stamp of its inputs and is skipped when nothing changed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
log() { printf '[setup] %s\n' "$*" >&2; }
stamp_ok() { [ -f "$1" ] && [ "$(cat "$1")" = "$2" ]; }
# apt-get install, quietly; when the package lists are stale, once more after apt-get update.
apt_install() {
  local sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  log "apt-get install $*"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "$@" >/dev/null 2>&1 \
    || { $sudo apt-get update >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "$@" >/dev/null; } \
    || { echo "setup.sh: could not install $* (apt-get install -y $*)" >&2; exit 1; }
}

WANT_TEST=0
for a in "$@"; do case "$a" in --test) WANT_TEST=1 ;; *) echo "setup.sh: unknown option $a" >&2; exit 2 ;; esac; done

# ---- a second S3 server for the storage tests and the upload benchmark: versitygw (Go), which verifies
# Content-MD5 and x-amz-checksum-crc32 itself (moto checks neither). Built from the Go module proxy in the
# background while the rest of the setup runs.
VGW_VERSION=v1.8.0
vgw_pid=""
if [ "$WANT_TEST" = 1 ] && ! stamp_ok "$ROOT/.tools/versitygw.stamp" "$VGW_VERSION"; then
  command -v go >/dev/null 2>&1 || { echo "setup.sh: go is needed to build versitygw $VGW_VERSION (the storage tests' S3 server)" >&2; exit 1; }
  log "go install versitygw@$VGW_VERSION (background)"
  mkdir -p "$ROOT/.tools/bin"
  ( GOBIN="$ROOT/.tools/bin" go install "github.com/versity/versitygw/cmd/versitygw@$VGW_VERSION" ) >"$ROOT/.tools/versitygw-build.log" 2>&1 &
  vgw_pid=$!
fi

# ---- Node dependencies (exact versions from package-lock.json)
lock_hash=$(sha256sum package-lock.json | cut -d' ' -f1)
if ! stamp_ok node_modules/.rlpipe-stamp "$lock_hash"; then
  log "npm ci"
  npm ci --no-audit --no-fund --loglevel=error 2>&1 | grep -v 'Unknown user config' >&2 || { echo "npm ci failed" >&2; exit 1; }
  echo "$lock_hash" > node_modules/.rlpipe-stamp
fi

# ---- build (TypeScript → dist/)
log "tsc"
rm -rf dist
node_modules/.bin/tsc -p tsconfig.json

# ---- system packages the sandbox needs: bubblewrap (rlpipe serve --sandbox local runs every program in it)
if ! command -v bwrap >/dev/null 2>&1; then
  apt_install bubblewrap
fi

[ "$WANT_TEST" = 1 ] || exit 0

# ---- system packages the tests need: a single-node Slurm cluster (slurm-wlm + munge; the tests start and stop it)
if [ ! -x /usr/sbin/slurmctld ] || [ ! -x /usr/sbin/munged ]; then
  apt_install slurm-wlm munge
fi

# ---- system package the multi-node Ray tests need: ip (iproute2), to give each Ray node a network namespace
if ! command -v ip >/dev/null 2>&1; then
  apt_install iproute2
fi

# ---- system package the plot tests need: rsvg-convert (librsvg2-bin), a real SVG renderer whose PNG the tests inspect
if ! command -v rsvg-convert >/dev/null 2>&1; then
  apt_install librsvg2-bin
fi

# ---- system packages the cost report test needs: chromium, a real browser that renders the HTML report headless,
# and a CJK font (price sources quote Chinese pages; without one they render as boxes in the screenshot)
if ! command -v chromium >/dev/null 2>&1 || [ ! -d /usr/share/fonts/truetype/wqy ]; then
  apt_install chromium fonts-wqy-microhei
fi

# ---- the local sandbox's language toolchains the tests run (Debian packages; Go, Java, bash and Perl come with the
# machine; Swift is Debian 13's and Julia Debian 11's, in roots rlpipe builds with debootstrap): rlpipe's own
# installer, which skips what is there (~0.5 s then) and rebuilds a root whose package list changed
SANDBOX_LANGUAGES=php,ruby,lua,perl,rust,D_ut,verilog,racket,scala,csharp,R,kotlin_script,swift,julia
log "rlpipe sandbox setup --languages $SANDBOX_LANGUAGES"
node dist/bin/rlpipe.js sandbox setup --languages "$SANDBOX_LANGUAGES" >/dev/null \
  || { echo "setup.sh: could not install the sandbox toolchains (rlpipe sandbox setup --languages $SANDBOX_LANGUAGES)" >&2; exit 1; }

# ---- the Python environment sandboxed programs import from (numpy, sympy, …; rlpipe serve --python-env): rlpipe's own
# builder, which does nothing when the environment was built from the same pinned list
# Outside the checkout: sandboxes run as users of their own, who must reach it (a clone may sit in a private dir).
PYTHON_ENV="${RLPIPE_TEST_PYTHON_ENV:-/var/tmp/rlpipe-test-python-env}"
log "rlpipe sandbox setup --python-env $PYTHON_ENV"
node dist/bin/rlpipe.js sandbox setup --python-env "$PYTHON_ENV" >/dev/null \
  || { echo "setup.sh: could not build the sandbox's Python environment (rlpipe sandbox setup --python-env $PYTHON_ENV)" >&2; exit 1; }

# ---- Python test environment: a project-local virtualenv (never the system site-packages)
VENV="$ROOT/.venv-test"
PY_REQS=(hydra-core==1.3.2 omegaconf==2.3.0 antlr4-python3-runtime==4.9.3 pytest==8.3.4 "moto[server]==5.2.1" "ray[default]==2.60.0")
VERL_RELEASES="0.5.0 0.6.0 0.6.1 0.7.0 0.7.1 0.8.0 0.9.0 0.9.1"   # the PyPI releases core/recipe/profiles.ts names
want="${PY_REQS[*]} | $VERL_RELEASES"
if ! stamp_ok "$VENV/.rlpipe-stamp" "$want"; then
  # Debian's interpreter starts fast; fall back to whatever python3 is on PATH.
  PY=/usr/bin/python3; [ -x "$PY" ] || PY=$(command -v python3)
  log "python venv at $VENV ($($PY --version))"
  rm -rf "$VENV"
  "$PY" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "${PY_REQS[@]}"
  for v in $VERL_RELEASES; do
    # --no-deps: only verl's trainer config is needed; Hydra composes it without importing verl or torch.
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps --target "$VENV/verl/$v" "verl==$v"
  done
  echo "$want" > "$VENV/.rlpipe-stamp"
fi
# cfn-lint lints the synthesized CDK templates (test/cdk.test.ts). moto[server] brings whichever release is newest;
# pinned here so that a new release's rules cannot change the verdict on unchanged templates.
CFN_LINT_VERSION=1.58.0
if [ "$("$VENV/bin/cfn-lint" --version 2>/dev/null)" != "cfn-lint $CFN_LINT_VERSION" ]; then
  log "pip install cfn-lint==$CFN_LINT_VERSION"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "cfn-lint==$CFN_LINT_VERSION"
fi
# SandboxFusion's published client SDK (its request and response models), for test/python/test_sandbox_fusion_sdk.py.
SANDBOX_FUSION_SDK_VERSION=0.3.7
if [ "$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("sandbox-fusion"))' 2>/dev/null)" != "$SANDBOX_FUSION_SDK_VERSION" ]; then
  log "pip install sandbox-fusion==$SANDBOX_FUSION_SDK_VERSION"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "sandbox-fusion==$SANDBOX_FUSION_SDK_VERSION"
fi
if [ -n "$vgw_pid" ]; then
  wait "$vgw_pid" || { cat "$ROOT/.tools/versitygw-build.log" >&2; echo "setup.sh: building versitygw $VGW_VERSION failed" >&2; exit 1; }
  echo "$VGW_VERSION" > "$ROOT/.tools/versitygw.stamp"
fi
log "ready"
