#!/usr/bin/env bash
# scripts/setup.sh — installs everything hfx needs to build and test on Debian 12. Idempotent: a second
# run installs nothing and takes seconds.
#
#   1. apt packages (compilers, CMake, ONNX/protobuf, flatbuffers, GoogleTest, ..., chromium, clang-16 for fuzzing)
#   2. node + npm only if `node` is missing (an existing Node 20 / npm 11 is left alone)
#   3. `npm ci` in deps/npm (ONNX Runtime library + headers, Transformers.js, tokenizers, node-llama-cpp),
#      skipped when node_modules already matches package-lock.json (HFX_FORCE_NPM=1 forces it)
#   4. checks that libonnxruntime.so.1 and the ONNX Runtime C++ headers are where cmake/onnxruntime.cmake
#      looks for them
#   6. the project's Python environment (oracles and runtimes for the interop tier: transformers, torch,
#      ExecuTorch, ONNX Runtime): a venv built on Debian's python3.11 from deps/python/requirements.lock (exact
#      versions and sha256), kept in HFX_VENV (default ~/.cache/hfx/venv-<lock hash>) and linked as .venv;
#      skipped when the venv already holds that lock, so a filled machine re-runs it offline. HFX_PYTHON_ENV=0
#      skips it. Measured cold here: 3.2 GB downloaded (torch's CUDA wheel and its nvidia-* libraries are
#      3.1 GB of it: PyPI has no CPU-only torch), 6.2 GB on disk, about 3 minutes.
#   5. extracts llama.cpp's Jinja engine (common/jinja, common/json.*, common/unicode.*, LICENSE; MIT) from the
#      llama.cpp source bundle that node-llama-cpp ships into deps/llama-jinja and applies
#      cmake/llama_jinja/*.patch (cmake/llama_jinja.cmake builds it into libhfx for chat templates)
#
# Runs as root, or through sudo otherwise.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NPM_DIR="$ROOT/deps/npm"
ORT_LIB="$NPM_DIR/node_modules/onnxruntime-node/bin/napi-v6/linux/x64/libonnxruntime.so.1"
ORT_INC="$NPM_DIR/node_modules/com.github.asus4.onnxruntime/Plugins/iOS~/onnxruntime.xcframework/ios-arm64/onnxruntime.framework/Headers"

log() { printf '[setup] %s\n' "$*"; }
die() { printf '[setup] error: %s\n' "$*" >&2; exit 1; }

if [[ $(id -u) -eq 0 ]]; then SUDO=(); else SUDO=(sudo); fi
export DEBIAN_FRONTEND=noninteractive

# ---- 1. apt packages ----
PACKAGES=(
  build-essential cmake ninja-build pkg-config git ca-certificates
  libprotobuf-dev protobuf-compiler libonnx-dev
  libflatbuffers-dev flatbuffers-compiler flatbuffers-compiler-dev  # -compiler-dev: flatbuffers::flatc target
  nlohmann-json3-dev libcli11-dev libfmt-dev libopenblas-dev libpcre2-dev libssl-dev libutf8proc-dev
  libcurl4-openssl-dev  # model ids: downloads from the Hugging Face Hub
  libzip-dev zipcmp zipmerge ziptool  # libzip's CMake config fails unless its three tools exist
  zlib1g-dev  # tests craft deflated zip records
  libpng-dev libjpeg62-turbo-dev  # image decoding for vision models (src/processors/image_decode.cpp)
  python3-pil  # tests only: Pillow, the resampler transformers' image processors use, as a parity oracle
  clang-16 libclang-rt-16-dev  # scripts/fuzz.sh: libFuzzer + ASan/UBSan (clang 14 lacks std::source_location)
  libgtest-dev libgmock-dev libbenchmark-dev
  chromium fonts-liberation  # headless screenshots of HTML reports in tests
  slurmctld slurmd slurm-client munge  # `hfx sweep --engine slurm` tests start a private single-node cluster
  libyaml-cpp-dev  # `hfx sweep PLAN.yaml`: YAML plans
  python3.11 python3.11-venv  # the base of the project's Python venv (step 6; deps/python/requirements.lock is cp311)
  python3.11-dev  # the Python package's extension module (pyproject.toml, python/): Python's headers
  python3-jinja2  # tests only: Python's Jinja2, the chat-template engine of transformers, as a parity oracle
  libsndfile1-dev libsoxr-dev libfftw3-dev  # audio (src/audio): WAV/FLAC decoding, resampling, Whisper's log-mel FFT
  espeak-ng  # tests only: speech clips for the Whisper tests (hfx transcribe vs Transformers.js)
  clang-format  # scripts/format_check.sh (a CI tier): the sources keep .clang-format
)
if ! command -v node >/dev/null 2>&1; then
  PACKAGES+=(nodejs npm)
elif ! command -v npm >/dev/null 2>&1; then
  die "node is installed ($(node --version)) but npm is not; install the npm that belongs to this node"
fi

missing=()
for p in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done
if ((${#missing[@]})); then
  log "apt-get install ${missing[*]}"
  "${SUDO[@]}" apt-get update -q
  "${SUDO[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  log "apt packages: all ${#PACKAGES[@]} present"
fi
log "node $(node --version), npm $(npm --version), cmake $(cmake --version | head -1 | awk '{print $3}')"

# ---- 2. npm packages ----
stamp="$NPM_DIR/node_modules/.hfx-lock.sha256"
want=$(sha256sum "$NPM_DIR/package-lock.json" | awk '{print $1}')
if [[ "${HFX_FORCE_NPM:-0}" != 1 && -f "$stamp" && "$(cat "$stamp")" == "$want" && -f "$ORT_LIB" ]]; then
  log "deps/npm: node_modules matches package-lock.json"
else
  log "deps/npm: npm ci (ONNX Runtime, Transformers.js, tokenizers, node-llama-cpp; ~1.7 GB)"
  # Install scripts are not needed: the packages ship prebuilt binaries, and onnxruntime-node's script
  # would try to download CUDA parts.
  (cd "$NPM_DIR" && ONNXRUNTIME_NODE_INSTALL=skip npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
  echo "$want" >"$stamp"
fi

# ---- 3. ONNX Runtime check ----
[[ -f "$ORT_LIB" ]] || die "ONNX Runtime library not found at $ORT_LIB
  (expected from onnxruntime-node@1.30.0 in deps/npm; rerun with HFX_FORCE_NPM=1)"
[[ -f "$ORT_INC/onnxruntime_cxx_api.h" && -f "$ORT_INC/onnxruntime_c_api.h" ]] ||
  die "ONNX Runtime C/C++ headers not found in $ORT_INC
  (expected from com.github.asus4.onnxruntime@0.4.9 in deps/npm; rerun with HFX_FORCE_NPM=1)"
api=$(sed -n 's/^#define ORT_API_VERSION \([0-9]*\).*/\1/p' "$ORT_INC/onnxruntime_c_api.h")
log "ONNX Runtime: $ORT_LIB (headers: ORT_API_VERSION $api)"

# ---- 5. llama.cpp's Jinja engine ----
# node-llama-cpp carries llama.cpp's source as a git bundle; only the Jinja engine and the two small
# helpers it includes are taken, then cmake/llama_jinja/*.patch are applied (fixes to Jinja semantics,
# each described in its header). The stamp holds the bundle's commit and the patches' hash, so a new
# node-llama-cpp or a changed patch re-extracts.
BUNDLE="$NPM_DIR/node_modules/node-llama-cpp/llama/gitRelease.bundle"
JINJA_DIR="$ROOT/deps/llama-jinja"
[[ -f "$BUNDLE" ]] || die "llama.cpp source bundle not found at $BUNDLE (expected from node-llama-cpp in deps/npm;
  rerun with HFX_FORCE_NPM=1)"
commit=$(git bundle list-heads "$BUNDLE" | awk '$2 == "HEAD" {print $1}')
[[ -n "$commit" ]] || die "expected a HEAD in $BUNDLE, got: $(git bundle list-heads "$BUNDLE" | head -3)"
patches=("$ROOT"/cmake/llama_jinja/*.patch)
stamp="$commit $(cat "${patches[@]}" | sha256sum | awk '{print $1}')"
if [[ -f "$JINJA_DIR/REVISION" && "$(cat "$JINJA_DIR/REVISION")" == "$stamp" ]]; then
  log "deps/llama-jinja: llama.cpp $commit already extracted"
else
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  git init -q "$tmp/repo"
  git -C "$tmp/repo" fetch -q "$BUNDLE" HEAD
  mkdir -p "$tmp/out"
  git -C "$tmp/repo" archive "$commit" LICENSE common/jinja common/json.h common/json.cpp common/unicode.h \
    common/unicode.cpp | tar -x -C "$tmp/out"
  for p in "${patches[@]}"; do
    (cd "$tmp/out" && git apply "$p") || die "could not apply $p to llama.cpp $commit"
  done
  echo "$stamp" >"$tmp/out/REVISION"
  rm -rf "$JINJA_DIR"
  mv "$tmp/out" "$JINJA_DIR"
  log "deps/llama-jinja: llama.cpp $commit (common/jinja, $(ls "$JINJA_DIR/common/jinja" | wc -l) files, ${#patches[@]} patch(es))"
fi

# ---- 6. the project's Python environment ----
LOCK="$ROOT/deps/python/requirements.lock"
TRAINED="$ROOT/deps/python/trained.lock"  # trained checkpoints as PyPI packages (no dependencies)
lock_sha=$(cat "$LOCK" "$TRAINED" | sha256sum | awk '{print $1}')
VENV="${HFX_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/hfx/venv-${lock_sha:0:12}}"
if [[ "${HFX_PYTHON_ENV:-1}" == 0 ]]; then
  log "python env: skipped (HFX_PYTHON_ENV=0)"
elif [[ -f "$VENV/.hfx-lock.sha256" && "$(cat "$VENV/.hfx-lock.sha256")" == "$lock_sha" ]]; then
  log "python env: $VENV holds deps/python/requirements.lock"
else
  log "python env: $VENV from deps/python/{requirements,trained}.lock ($(cat "$LOCK" "$TRAINED" | grep -c -- '--hash=') packages, ~3.3 GB download)"
  rm -rf "$VENV.tmp"
  mkdir -p "$(dirname "$VENV")"
  /usr/bin/python3.11 -m venv "$VENV.tmp"
  pip_version=$(sed -n 's/^# pip==\(.*\)$/\1/p' "$LOCK")
  "$VENV.tmp/bin/python" -m pip install -q --no-input "pip==$pip_version"
  # --no-deps: the lock is the whole environment; --require-hashes: each file is the one that was locked.
  "$VENV.tmp/bin/python" -m pip install -q --no-input --no-deps --require-hashes -r "$LOCK" -r "$TRAINED" ||
    die "pip could not install $LOCK and $TRAINED into $VENV.tmp (is the package index reachable? re-run when it is)"
  echo "$lock_sha" >"$VENV.tmp/.hfx-lock.sha256"
  # Built as VENV.tmp and renamed only when complete, so an interrupted install never looks filled. The
  # console scripts' shebangs keep the .tmp path: the project runs everything as `.venv/bin/python -m ...`.
  rm -rf "$VENV"
  mv "$VENV.tmp" "$VENV"
fi
if [[ "${HFX_PYTHON_ENV:-1}" != 0 ]]; then
  # locked_folder LOCK LINK — installs LOCK (exact versions, hashes, no dependencies) into a folder of the venv
  # keyed by the lock's hash, once, and links it as ROOT/LINK; sets locked_dir to the folder.
  locked_folder() {
    locked_dir="$VENV/$2-$(sha256sum "$1" | cut -c1-12)"
    if [[ ! -d "$locked_dir" ]]; then
      rm -rf "$locked_dir.tmp"
      "$VENV/bin/python" -m pip install -q --no-input --no-deps --require-hashes --target "$locked_dir.tmp" \
        -r "$1" || die "pip could not install $1 into $locked_dir.tmp (is the package index reachable?)"
      mv "$locked_dir.tmp" "$locked_dir"
    fi
    ln -sfn "$locked_dir" "$ROOT/.$2"
  }
  # The anchors (deps/python/anchors.lock): released tools run beside hfx, in a folder of their own on
  # PYTHONPATH (they ship a `gguf` package of their own).
  ANCHORS="$ROOT/deps/python/anchors.lock"
  locked_folder "$ANCHORS" anchors
  anchors_dir=$locked_dir
  # The Python package's build backend (deps/python/build.lock: scikit-build-core, nanobind), linked as
  # .pybuild: scripts/test.sh builds the wheel with it on PYTHONPATH, without build isolation (no download).
  locked_folder "$ROOT/deps/python/build.lock" pybuild
  log "anchors: .anchors -> $anchors_dir ($(grep -c -- '--hash=' "$ANCHORS") package(s): $(grep -o '^[a-z0-9-]*==[0-9.]*' "$ANCHORS" | tr '\n' ' '))"
  ln -sfn "$VENV" "$ROOT/.venv"
  log "python env: .venv -> $VENV ($("$ROOT/.venv/bin/python" -c 'import torch, transformers, executorch.version as e, onnxruntime as o; print(f"torch {torch.__version__}, transformers {transformers.__version__}, executorch {e.__version__}, onnxruntime {o.__version__}")' 2>/dev/null || echo 'BROKEN: rm -rf it and re-run setup'))"
fi
log "done"
