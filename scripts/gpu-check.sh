#!/usr/bin/env bash
# GPU checks in two halves (see scripts/README.md):
#
#   scripts/gpu-check.sh bundle OUT_DIR        on a build machine (no GPU needed)
#   scripts/gpu-check.sh run BUNDLE_DIR RESULTS_DIR   on the GPU machine
#
# bundle: builds what the run uses (in $KERNELEVAL_BUILD_DIR, default
#   build-cuda) and copies into OUT_DIR those binaries (kerneleval for the
#   smoke step, kerneleval-worker, the timing probe, bench_eval, every ctest
#   executable labelled "gpu"), the shared libraries they need that the GPU
#   machine may lack (everything ldd finds except glibc and the CUDA
#   driver/toolkit libraries; libstdc++/libgcc_s only as a fallback, used
#   when the machine's libstdc++ is too old), problems/ and the data files,
#   env.sh (LD_LIBRARY_PATH, KERNELEVAL_WORKER, ...) and MANIFEST (commit,
#   CUDA/NVRTC versions, glibc/libstdc++ versions needed). Debug info is
#   stripped; the bundle plus the checkout the device tool copies with it
#   must stay under 64 MiB (checked, printed; a warning under 4 MiB spare).
# run: device-info, a smoke step (kerneleval compile + devices), the timing
#   probe, scripts/torch_crosscheck.py, engine_gpu_test, bench_eval,
#   cuda_gpu_test, exploits_gpu_test, scripts/context_cost.py and a fixed
#   subset of the solutions suite ($GPU_CHECK_SOLUTIONS), within
#   GPU_CHECK_BUDGET seconds (default 420); each step is logged and the next
#   runs even if it failed; a test binary whose tests skipped counts as
#   failed. RESULTS_DIR gets summary.txt, probe.json, crosscheck.json,
#   context_cost.json, bench_eval.json and logs.tar.gz, rewritten after every
#   step, and current.log (the running step's log) while a step runs: at
#   most 7 files (the device tool returns at most 8).
#   Exit status: 0 every step passed (the solutions subset may be cut by the
#   budget), 1 a step failed, timed out, skipped tests or was cut by the
#   budget, 2 usage or no bundle, 3 no CUDA device (the probe found no
#   driver or device: nothing on the GPU was measured).
set -uo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_DIR="$(cd "${SCRIPT_DIR}/.." && pwd)"
MAX_TREE_BYTES=$((64 * 1024 * 1024))
MIN_SPARE_BYTES=$((4 * 1024 * 1024))

usage() {
  sed -n '2,32p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
  exit 2
}

log() { printf '[gpu-check] %s\n' "$*" >&2; }

# ------------------------------------------------------------------ bundle

# Libraries the GPU machine provides itself: glibc's, the kernel's vdso, and
# the CUDA driver and toolkit (libcuda comes with the driver; nvrtc & co with
# the toolkit, in the version the driver matches).
is_system_library() {
  case "$(basename "$1")" in
    linux-vdso.so* | ld-linux*.so* | libc.so* | libm.so* | libdl.so* | libpthread.so* | \
      librt.so* | libresolv.so* | libutil.so* | libanl.so*) return 0 ;;
    libcuda.so* | libnvrtc*.so* | libcudart*.so* | libnvJitLink*.so* | libnvidia-*.so*) return 0 ;;
  esac
  return 1
}

# The GCC runtime: bundled in lib/fallback/, used only where the machine's
# own is older than the binaries need (env.sh): the build machine's copy
# needs a newer glibc (2.36 for Debian 12's) than the binaries themselves.
is_gcc_runtime() {
  case "$(basename "$1")" in
    libstdc++.so* | libgcc_s.so*) return 0 ;;
  esac
  return 1
}

# The newest symbol version of PREFIX (GLIBC, GLIBCXX, CXXABI) the files
# ask for (undefined symbols only).
newest_needed() {
  local prefix="$1"
  shift
  for f in "$@"; do objdump -T "${f}" 2>/dev/null | grep -F '*UND*'; done |
    grep -oE "\b${prefix}_[0-9.]*[0-9]" | sort -uV | tail -n 1
}

# Bytes of what the device tool copies besides the carried bundle: the
# checkout's tracked files and its untracked files git does not ignore (the
# bundle itself left out when it lies inside the checkout unignored).
checkout_bytes() {
  local bundle_rel="$1"
  (
    cd "${REPO_DIR}" || exit 0
    {
      git ls-files -z
      git ls-files -z --others --exclude-standard
    } 2>/dev/null | while IFS= read -r -d '' f; do
      [[ -n "${bundle_rel}" && "${f}" == "${bundle_rel}"/* ]] && continue
      [[ -f "${f}" && ! -L "${f}" ]] && stat -c %s -- "${f}"
    done | awk '{s += $1} END {print s + 0}'
  )
}

bundle() {
  local out="$1"
  local build="${KERNELEVAL_BUILD_DIR:-${REPO_DIR}/build-cuda}"
  local jobs="${KERNELEVAL_BUILD_JOBS:-2}"
  log "build dir: ${build}"
  if [[ ! -f "${build}/build.ninja" ]]; then
    cmake -S "${REPO_DIR}" -B "${build}" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo || {
      log "cmake configure failed"
      return 1
    }
  fi
  # Build each wanted target on its own: one that does not build (another
  # part mid-change) must not stop the others.
  local all_targets
  all_targets="$(ninja -C "${build}" -t targets all 2>/dev/null | sed -n 's/^\([^:/]*\): phony$/\1/p' |
    grep -v '^cmake_' || true)"
  build_target() {
    printf '%s\n' "${all_targets}" | grep -qx "$1" || return 1
    cmake --build "${build}" -j "${jobs}" --target "$1" >"/tmp/gpu-check-build-$1.log" 2>&1
  }
  # Only what the run uses: kerneleval (the smoke step), the worker, the
  # probe and bench_eval. The server and the CPU-only benches (bench_compile,
  # cpu_backend_bench, kerneleval_server_bench) measure nothing on a GPU.
  local wanted=(kerneleval kerneleval-worker kerneleval_cuda_timing_probe bench_eval)
  # GPU test executables must exist before ctest can list their tests (and
  # labels): build the ones whose names say gpu first.
  while read -r t; do wanted+=("$t"); done < <(printf '%s\n' "${all_targets}" | grep -iE 'gpu' | grep -vE '(peaks|[.])' || true)
  local built=() failed=()
  for target in "${wanted[@]}"; do
    if ! printf '%s\n' "${all_targets}" | grep -qx "${target}"; then continue; fi
    if build_target "${target}"; then
      built+=("${target}")
    else
      failed+=("${target}")
      log "target ${target} failed to build (see /tmp/gpu-check-build-${target}.log)"
    fi
  done
  # The test worker only stands in for a kerneleval-worker that did not build.
  if ! printf '%s\n' "${built[@]}" | grep -qx kerneleval-worker &&
    build_target kerneleval_cuda_test_worker; then
    built+=(kerneleval_cuda_test_worker)
  fi
  # Whatever other gpu-labelled tests exist (e.g. the engine-level suite).
  local gpu_tests
  gpu_tests="$(cd "${build}" && ctest -L gpu --show-only=json-v1 2>/dev/null | python3 -c '
import json, sys
try:
    data = json.load(sys.stdin)
except ValueError:
    sys.exit(0)
seen = set()
for test in data.get("tests", []):
    command = test.get("command") or []
    if command and command[0] not in seen:
        seen.add(command[0])
        print(command[0])
')"
  local gpu_built=""
  for exe in ${gpu_tests}; do
    local target
    target="$(basename "${exe}")"
    if printf '%s\n' "${built[@]}" | grep -qx "${target}" ||
      cmake --build "${build}" -j "${jobs}" --target "${target}" >"/tmp/gpu-check-build-${target}.log" 2>&1; then
      gpu_built+=" ${exe}"
    else
      failed+=("${target}")
    fi
  done
  gpu_tests="${gpu_built}"

  rm -rf "${out}"
  mkdir -p "${out}/bin" "${out}/lib/fallback" "${out}/share" "${out}/gpu-tests"
  # Only what built now: a stale binary from an earlier build would test old code.
  local executables=()
  # Every gpu test goes to gpu-tests/ below, not also to bin/ (the 64 MiB).
  local gpu_test_names=" cuda_gpu_test"
  for exe in ${gpu_tests}; do gpu_test_names+=" $(basename "${exe}")"; done
  for target in "${built[@]}"; do
    local path
    path="$(find "${build}" -type f -name "${target}" -perm -u+x ! -path '*/CMakeFiles/*' 2>/dev/null | head -n 1)"
    [[ -z "${path}" ]] && continue
    case "${gpu_test_names} " in
      *" ${target} "*) ;;
      *) executables+=("${path}:bin") ;;
    esac
  done
  for exe in ${gpu_tests}; do
    [[ -x "${exe}" ]] && executables+=("${exe}:gpu-tests")
  done

  local copied=()
  for item in "${executables[@]}"; do
    local path="${item%%:*}" dir="${item##*:}"
    local dest
    dest="${out}/${dir}/$(basename "${path}")"
    [[ -e "${dest}" ]] && continue
    # Debug info off: RelWithDebInfo binaries are several times larger.
    objcopy --strip-debug "${path}" "${dest}" 2>/dev/null || cp "${path}" "${dest}"
    chmod +x "${dest}"
    copied+=("${dir}/$(basename "${path}")")
    while read -r lib; do
      [[ -z "${lib}" || ! -f "${lib}" ]] && continue
      is_system_library "${lib}" && continue
      local lib_dest
      lib_dest="${out}/lib/$(basename "${lib}")"
      is_gcc_runtime "${lib}" && lib_dest="${out}/lib/fallback/$(basename "${lib}")"
      [[ -e "${lib_dest}" ]] || objcopy --strip-debug "${lib}" "${lib_dest}" 2>/dev/null ||
        cp -L "${lib}" "${lib_dest}"
    done < <(ldd "${path}" 2>/dev/null | awk '/=> \// {print $3}')
  done

  # Data: problems, the CPU prelude and compile includes, the peak table.
  [[ -d "${REPO_DIR}/problems" ]] && cp -r "${REPO_DIR}/problems" "${out}/share/problems"
  [[ -d "${REPO_DIR}/evaluator/cpu/prelude" ]] &&
    mkdir -p "${out}/share/cpu" && cp -r "${REPO_DIR}/evaluator/cpu/prelude" "${out}/share/cpu/"
  [[ -d "${REPO_DIR}/evaluator/compile/include" ]] &&
    mkdir -p "${out}/share/compile" && cp -r "${REPO_DIR}/evaluator/compile/include" "${out}/share/compile/"
  [[ -f "${REPO_DIR}/gpu_peaks/gpu_peaks.textproto" ]] &&
    cp "${REPO_DIR}/gpu_peaks/gpu_peaks.textproto" "${out}/share/"
  cp "${SCRIPT_DIR}/gpu-check.sh" "${SCRIPT_DIR}/torch_crosscheck.py" "${SCRIPT_DIR}/context_cost.py" \
    "${out}/"

  # What the binaries need from the machine: glibc's and the GCC runtime's
  # symbol versions (the bundled libraries' too, the fallback's apart).
  local needs_files=() fallback_files=()
  while IFS= read -r -d '' f; do needs_files+=("$f"); done < <(find "${out}/bin" "${out}/gpu-tests" \
    "${out}/lib" -maxdepth 1 -type f -print0)
  while IFS= read -r -d '' f; do fallback_files+=("$f"); done < <(find "${out}/lib/fallback" -type f -print0)
  local need_glibc need_glibcxx need_cxxabi fallback_glibc=""
  need_glibc="$(newest_needed GLIBC "${needs_files[@]}")"
  need_glibcxx="$(newest_needed GLIBCXX "${needs_files[@]}")"
  need_cxxabi="$(newest_needed CXXABI "${needs_files[@]}")"
  ((${#fallback_files[@]})) && fallback_glibc="$(newest_needed GLIBC "${fallback_files[@]}")"
  # The toolkit and NVRTC the bundle was built with (the machine needs its
  # own libnvrtc.so.13, and a driver at least as new: device-info compares).
  local nvcc cuda_release cuda_version nvrtc_lib nvrtc_version=""
  nvcc="$(sed -n 's/^CUDAToolkit_NVCC_EXECUTABLE:FILEPATH=//p' "${build}/CMakeCache.txt" 2>/dev/null)"
  cuda_release="$("${nvcc:-nvcc}" --version 2>/dev/null | grep -oE 'release [0-9.]+, V[0-9.]+' | head -n 1)"
  cuda_version="$(printf '%s' "${cuda_release}" | sed -n 's/^release \([0-9.]*\),.*/\1/p')"
  nvrtc_lib="$(ldd "${out}/bin/kerneleval-worker" 2>/dev/null | awk '/libnvrtc/ {print $3; exit}')"
  [[ -n "${nvrtc_lib}" ]] && nvrtc_version="$(nvrtc_version_of "${nvrtc_lib}")"

  # env.sh: what the binaries need at run time on the GPU machine.
  local worker=kerneleval-worker
  [[ -x "${out}/bin/kerneleval-worker" ]] || worker=kerneleval_cuda_test_worker
  cat >"${out}/env.sh" <<EOF
# Source me: sets up the bundled binaries on the GPU machine.
KE_BUNDLE="\$(cd "\$(dirname "\${BASH_SOURCE[0]}")" && pwd)"
export KE_BUNDLE
# What LD_LIBRARY_PATH was before: Python (torch, CuPy) gets this, not the
# bundle's libraries or the toolkit's, which would override torch's own
# cuBLAS/cuDNN/NVRTC (found through RUNPATH).
export KE_ORIG_LD_LIBRARY_PATH="\${LD_LIBRARY_PATH:-}"
# The bundle's build: CUDA ${cuda_version:-?} (NVRTC ${nvrtc_version:-?}).
export KE_BUNDLE_CUDA_VERSION="${cuda_version}" KE_BUNDLE_NVRTC_VERSION="${nvrtc_version}"
# The CUDA toolkit: KERNELEVAL_CUDA_HOME, CUDA_HOME or CUDA_PATH if set, else
# from nvcc on the PATH, else the usual place. Its headers serve NVRTC; its
# libnvrtc (libnvrtc.so.13: not bundled, 109 MB) is found below it.
ke_cuda="\${KERNELEVAL_CUDA_HOME:-\${CUDA_HOME:-\${CUDA_PATH:-}}}"
if [[ -z "\${ke_cuda}" ]] && command -v nvcc >/dev/null 2>&1; then
  ke_cuda="\$(dirname "\$(dirname "\$(readlink -f "\$(command -v nvcc)")")")"
fi
: "\${ke_cuda:=/usr/local/cuda}"
export KERNELEVAL_CUDA_HOME="\${ke_cuda}"
ke_nvrtc="\$(find -L "\${ke_cuda}" -maxdepth 4 -name 'libnvrtc.so.*' 2>/dev/null | head -n 1)"
ke_nvrtc_dir="\${ke_nvrtc:+\$(dirname "\${ke_nvrtc}")}"
# The GCC runtime: the machine's own where it has the versions the binaries
# need (${need_glibcxx:-?}, ${need_cxxabi:-?}), else the bundled one in
# lib/fallback (which itself needs ${fallback_glibc:-?}).
ke_stdcxx="\$({ /sbin/ldconfig -p || ldconfig -p; } 2>/dev/null | awk '/libstdc\+\+\.so\.6 .*x86-64/ {print \$NF; exit}')"
if [[ -z "\${ke_stdcxx}" ]]; then
  for ke_f in /usr/lib/x86_64-linux-gnu/libstdc++.so.6 /usr/lib64/libstdc++.so.6 /lib64/libstdc++.so.6; do
    [[ -e "\${ke_f}" ]] && ke_stdcxx="\${ke_f}" && break
  done
fi
ke_fallback="\${KE_BUNDLE}/lib/fallback:"
if [[ "\${KERNELEVAL_BUNDLED_LIBSTDCXX:-0}" == 1 ]]; then
  export KE_LIBSTDCXX="the bundled lib/fallback (KERNELEVAL_BUNDLED_LIBSTDCXX=1)"
elif [[ -n "\${ke_stdcxx}" ]] && grep -qF "${need_glibcxx:-GLIBCXX_3.4}" "\${ke_stdcxx}" &&
  grep -qF "${need_cxxabi:-CXXABI_1.3}" "\${ke_stdcxx}"; then
  ke_fallback=""
  export KE_LIBSTDCXX="the machine's (\${ke_stdcxx})"
else
  export KE_LIBSTDCXX="the bundled lib/fallback (the machine's, \${ke_stdcxx:-not found}, lacks ${need_glibcxx:-?} or ${need_cxxabi:-?})"
fi
# Bundled libraries first, then the toolkit's (nvrtc) and the driver's.
export LD_LIBRARY_PATH="\${KE_BUNDLE}/lib:\${ke_fallback}\${ke_nvrtc_dir:+\${ke_nvrtc_dir}:}\${ke_cuda}/lib64:\${ke_cuda}/lib:/usr/local/nvidia/lib64:/usr/local/nvidia/lib\${LD_LIBRARY_PATH:+:\${LD_LIBRARY_PATH}}"
unset ke_cuda ke_nvrtc ke_nvrtc_dir ke_stdcxx ke_f ke_fallback
export PATH="\${KE_BUNDLE}/bin:\${PATH}"
export KERNELEVAL_WORKER="\${KE_BUNDLE}/bin/${worker}"
export KERNELEVAL_PROBLEMS_DIR="\${KE_BUNDLE}/share/problems"
export KERNELEVAL_INCLUDE_DIR="\${KE_BUNDLE}/share/compile/include"
export KERNELEVAL_CPU_PRELUDE_DIR="\${KE_BUNDLE}/share/cpu/prelude"
# On a driver older than the CUDA the bundle was built with, the worker
# still starts (its own kernels are PTX ISA 6.3) and shows what runs, rather
# than every step stopping at load; NVRTC's CUBINs then fail at their first
# module. The summary's first lines say so (driver against bundle CUDA).
export KERNELEVAL_CUDA_ALLOW_OLDER_DRIVER="\${KERNELEVAL_CUDA_ALLOW_OLDER_DRIVER:-1}"
EOF
  {
    echo "built from: $(git -C "${REPO_DIR}" rev-parse HEAD 2>/dev/null) ($(date -u +%FT%TZ))"
    echo "cuda: ${cuda_release:-unknown}, NVRTC ${nvrtc_version:-unknown}: needs the machine's libnvrtc.so.13 and a driver for CUDA ${cuda_version:-?} or newer"
    echo "needs: ${need_glibc:-?} (glibc), ${need_glibcxx:-?} and ${need_cxxabi:-?} (libstdc++; else lib/fallback's, which needs ${fallback_glibc:-?})"
    echo "worker: ${worker}"
    echo "targets built: ${built[*]:-}"
    echo "targets that failed to build: ${failed[*]:-none}"
    echo "files:"
    printf '  %s\n' "${copied[@]}"
  } >"${out}/MANIFEST"

  # The device tool's 64 MiB covers everything it copies: the bundle
  # (carried) and the checkout beside it.
  local bytes tree_bytes out_abs bundle_rel=""
  bytes="$(du -sb "${out}" | cut -f1)"
  out_abs="$(cd "${out}" && pwd)"
  [[ "${out_abs}" == "${REPO_DIR}"/* ]] && bundle_rel="${out_abs#"${REPO_DIR}"/}"
  tree_bytes="$(checkout_bytes "${bundle_rel}")"
  local total=$((bytes + tree_bytes))
  log "bundle: ${out}: $((bytes / 1024 / 1024)) MiB (${bytes} bytes), ${#copied[@]} executables, $(find "${out}/lib" -type f | wc -l) libraries"
  log "with the checkout (tracked + untracked not ignored: ${tree_bytes} bytes): $((total / 1024 / 1024)) MiB, $(((MAX_TREE_BYTES - total) / 1024)) KiB spare under the device tool's 64 MiB"
  [[ ${#failed[@]} -gt 0 ]] && log "not built: ${failed[*]}"
  if ((total > MAX_TREE_BYTES)); then
    log "ERROR: the bundle and the checkout come to more than the device tool's 64 MiB"
    return 1
  fi
  if ((MAX_TREE_BYTES - total < MIN_SPARE_BYTES)); then
    log "WARNING: less than 4 MiB spare under the device tool's 64 MiB (untracked files in the checkout count too)"
  fi
  return 0
}

# NVRTC's own version (MAJOR.MINOR) of the library at $1.
nvrtc_version_of() {
  python3 -c '
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
major, minor = ctypes.c_int(), ctypes.c_int()
lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
print(f"{major.value}.{minor.value}")
' "$1" 2>/dev/null
}

# --------------------------------------------------------------------- run

# The solutions suite's fixed subset (a full run, 49 problems, takes 3-6 min:
# more than the budget leaves): the problem with GPU-only solutions
# (tensor-core matmul_f16), the other half-precision types, atomics, a scan,
# convolutions and the fused or long-row kernels. GPU_CHECK_SOLUTIONS=all runs
# every problem; a comma-separated list runs those.
DEFAULT_SOLUTIONS=matmul_f16,matmul_bf16,gelu_bf16,silu_f16,histogram,cumsum_rows,conv2d,scaled_matmul_softmax,softmax_long_rows,embedding_gather,transpose,layernorm_gelu

# What the machine is and which libraries were chosen: lines starting "> "
# go to the top of summary.txt.
device_info() {
  local py_ld="$1"
  # gVisor reports kernel 4.4.0: its nvproxy carries every driver call, so
  # host-side and driver-call figures (context creation, worker start-up)
  # are its, not the hardware's; GPU-side event timings are not affected.
  local kernel
  kernel="$(uname -r)"
  echo "> runtime: kernel ${kernel}$([[ "${kernel}" == 4.4.0* ]] &&
    echo ' (gVisor: host-side and driver-call figures include its nvproxy)')"
  echo "> gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,pstate \
    --format=csv,noheader 2>&1 | head -n 2 | paste -sd ';')"
  local driver_cuda machine_nvrtc_lib machine_nvrtc
  driver_cuda="$(nvidia-smi 2>/dev/null | grep -oE 'CUDA Version: [0-9.]+' | head -n 1 | awk '{print $3}')"
  machine_nvrtc_lib="$(ldd "${KERNELEVAL_WORKER}" 2>/dev/null | awk '/libnvrtc/ {print $3; exit}')"
  machine_nvrtc="$( [[ -f "${machine_nvrtc_lib}" ]] && nvrtc_version_of "${machine_nvrtc_lib}")"
  echo "> cuda: driver supports ${driver_cuda:-? (no nvidia-smi)}; bundle built with" \
    "${KE_BUNDLE_CUDA_VERSION:-?} (NVRTC ${KE_BUNDLE_NVRTC_VERSION:-?}); this machine's NVRTC:" \
    "${machine_nvrtc:-none} (${machine_nvrtc_lib:-libnvrtc.so.13 not found})"
  version_number() { awk -F. '{printf "%d\n", $1 * 1000 + $2 * 10}' <<<"$1"; }
  if [[ -n "${driver_cuda}" && -n "${KE_BUNDLE_CUDA_VERSION}" ]] &&
    (($(version_number "${driver_cuda}") < $(version_number "${KE_BUNDLE_CUDA_VERSION}"))); then
    echo "> WARNING: the driver (CUDA ${driver_cuda}) is older than the bundle's CUDA" \
      "${KE_BUNDLE_CUDA_VERSION}: NVRTC's CUBINs will not load (KERNELEVAL_CUDA_ALLOW_OLDER_DRIVER=1" \
      "lets the rest run)"
  fi
  echo "> libc: $(ldd --version 2>&1 | head -n 1); libstdc++: ${KE_LIBSTDCXX:-?}"
  echo
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv
  nvidia-smi -q -d CLOCK,PERFORMANCE | head -n 40
  echo "nvcc: $(command -v nvcc)"
  echo "KERNELEVAL_CUDA_HOME=${KERNELEVAL_CUDA_HOME}"
  echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH}"
  echo "Python's LD_LIBRARY_PATH=${py_ld}"
  ldd "${KERNELEVAL_WORKER}" | grep -E "nvrtc|stdc\+\+|not found"
  ls "${KERNELEVAL_CUDA_HOME}/include/cuda_runtime.h"
  env LD_LIBRARY_PATH="${py_ld}" python3 -c "import torch; print('torch', torch.__version__, torch.cuda.is_available())" ||
    echo "torch: not importable"
  env LD_LIBRARY_PATH="${py_ld}" python3 -c "import cupy; print('cupy', cupy.__version__)" ||
    echo "cupy: not importable (the cross-check's same-kernel timing needs it)"
  return 0
}

# ~2 s: NVRTC in the compile sandbox with the toolkit's and CCCL's headers,
# and the engine's view of the devices. A sandbox or toolkit problem (gVisor:
# no Landlock, mount namespaces) reads here as one line, not as every
# engine-level test skipping.
smoke() {
  local src out rc=0
  src="$(mktemp --suffix=.cu)"
  # <cub/cub.cuh> itself does not compile under NVRTC (its device-wide
  # algorithms are host code); the block-level headers are what kernels use.
  cat >"${src}" <<'EOF'
#include <cuda_fp16.h>
#include <cub/block/block_reduce.cuh>
extern "C" __global__ void smoke(const __half* in, float* out, int n) {
  using BlockReduce = cub::BlockReduce<float, 128>;
  __shared__ typename BlockReduce::TempStorage temp;
  int i = blockIdx.x * 128 + threadIdx.x;
  float v = i < n ? __half2float(in[i]) : 0.0f;
  float sum = BlockReduce(temp).Sum(v);
  if (threadIdx.x == 0) out[blockIdx.x] = sum;
}
EOF
  out="$(kerneleval compile "${src}" 2>&1)" || rc=1
  local devices drc=0
  # At info level: the engine's start-up log says what confines a compile.
  devices="$(SPDLOG_LEVEL=info kerneleval devices 2>&1)" || drc=1
  # The details first; the headlines ("> ", the summary's top) last.
  head -n 40 <<<"${out}"
  echo
  if ((rc == 0)); then
    echo "> compile: $(grep -v '^\[20' <<<"${out}" | head -n 1 | cut -c1-160)"
  else
    echo "> compile FAILED: $(grep -v '^\s*$' <<<"${out}" | head -n 3 | cut -c1-200 | paste -sd '|')"
  fi
  grep -v '^\[20' <<<"${devices}" | sed 's/^/> devices: /' | head -n 6
  echo "> compile sandbox: $(grep -oE 'workers confined by .*' <<<"${devices}" | head -n 1 |
    cut -c21-140)"
  if ! grep -q '^cuda' <<<"${devices}"; then
    echo "> devices: no CUDA device listed"
    drc=1
  fi
  rm -f "${src}"
  echo "smoke: compile $( ((rc == 0)) && echo ok || echo FAILED), CUDA device $( ((drc == 0)) && echo listed || echo 'NOT listed')"
  ((rc == 0 && drc == 0))
}

run() {
  local bundle_dir results
  bundle_dir="$(cd "$1" && pwd)" || { log "no bundle at $1"; return 2; }
  [[ -f "${bundle_dir}/env.sh" ]] || { log "no bundle at $1 (no env.sh)"; return 2; }
  mkdir -p "$2" && results="$(cd "$2" && pwd)"
  # Logs live outside RESULTS_DIR (the device tool returns at most 8 files)
  # and are packed into logs.tar.gz after every step; the running step's log
  # is RESULTS_DIR/current.log until it ends (a kill mid-step keeps it).
  local logs
  logs="$(mktemp -d /tmp/gpu-check-logs.XXXXXX)"
  # A transfer may drop execute bits.
  chmod +x "${bundle_dir}"/bin/* "${bundle_dir}"/gpu-tests/* 2>/dev/null || true
  # shellcheck source=/dev/null
  source "${bundle_dir}/env.sh"
  export -f device_info smoke nvrtc_version_of
  # Python (torch, CuPy, ctypes' libcuda) gets the machine's own libraries:
  # LD_LIBRARY_PATH as it was before env.sh, plus the driver's usual place.
  local py_ld="${KE_ORIG_LD_LIBRARY_PATH:+${KE_ORIG_LD_LIBRARY_PATH}:}/usr/local/nvidia/lib64:/usr/local/nvidia/lib"
  local python=(env LD_LIBRARY_PATH="${py_ld}" PYTHONUNBUFFERED=1 python3)
  local summary="${results}/summary.txt"
  : >"${summary}"
  rm -f "${results}/current.log"
  local -a rows=() failed_steps=()
  local no_device=0
  # Steps the budget may cut without failing the run.
  local optional_steps=" test-problems_solutions_gpu_test "
  # The whole run stays inside GPU_CHECK_BUDGET seconds (default 420): each
  # step's timeout is cut to what is left, steps that would start with less
  # than 15 s are skipped, and the summary is rewritten after every step, so
  # a run killed at the device tool's limit still leaves its results.
  local budget="${GPU_CHECK_BUDGET:-420}"
  local started
  started="$(date +%s)"
  local deadline=$((started + budget))
  seconds_left() { echo $((deadline - $(date +%s) - 10)); }

  write_summary() {
    {
      echo "kerneleval gpu-check: $(date -u +%FT%TZ) on $(hostname), $(($(date +%s) - started)) s of ${budget}"
      head -n 3 "${bundle_dir}/MANIFEST"
      # The machine, the versions and the smoke test, first.
      grep -h '^> ' "${logs}/device-info.log" "${logs}/smoke.log" "${logs}/sandbox-fallback.log" \
        "${logs}/smoke-unsandboxed.log" 2>/dev/null | cut -c3-
      echo
      printf '%-34s %-12s %6s  %s\n' step status time "last line of its log"
      printf '%s\n' "${rows[@]}"
      echo
      if [[ -f "${logs}/test-results.txt" ]]; then
        echo "gpu tests: $(grep -c '^\[ *OK' "${logs}/test-results.txt") passed," \
          "$(grep -c '^\[ *FAILED' "${logs}/test-results.txt") failed," \
          "$(grep -c '^\[ *SKIPPED' "${logs}/test-results.txt") skipped"
        local not_passed
        not_passed="$(grep -E '^\[ *(FAILED|SKIPPED)' "${logs}/test-results.txt" | sed 's/, where GetParam() = .* (/ (/')"
        if [[ -n "${not_passed}" ]]; then
          head -n 30 <<<"${not_passed}" | sed 's/^/  /'
          (($(wc -l <<<"${not_passed}") > 30)) && echo "  ... and $(($(wc -l <<<"${not_passed}") - 30)) more (logs.tar.gz)"
        fi
        # Why tests skipped (the first reason of each binary).
        grep -h -m 1 -B 1 -E '^\[ +SKIPPED +\]' "${logs}"/test-*.log 2>/dev/null | grep -v '^\[' |
          grep -v '^--$' | sed 's/^/  skip reason: /' | head -n 8
      fi
      for name in timing-probe torch-crosscheck context-cost; do
        [[ -f "${logs}/${name}.log" ]] || continue
        echo
        echo "--- ${name}"
        tail -n 12 "${logs}/${name}.log"
      done
      if [[ -f "${logs}/bench-eval.log" ]]; then
        echo
        echo "--- bench-eval"
        # Its tables (stdout, from the "bench_eval results" line), without log lines.
        sed -n '/^bench_eval results/,$p' "${logs}/bench-eval.log" | grep -v '^\[20' ||
          tail -n 8 "${logs}/bench-eval.log"
      fi
      if [[ -f "${logs}/device-info.log" ]]; then
        echo
        echo "--- device-info"
        grep -v '^> ' "${logs}/device-info.log" | sed '/^$/d' | head -n 3
        tail -n 8 "${logs}/device-info.log"
      fi
    } >"${summary}"
    tar -czf "${results}/logs.tar.gz" -C "${logs}" . 2>/dev/null || true
  }

  # step NAME LIMIT -- COMMAND...: runs with a timeout (LIMIT seconds, cut
  # to the budget), logs to NAME.log, records its status, carries on.
  # Status: pass, FAIL(rc), TIMEOUT (its own limit), CUT(budget) (the
  # budget's shorter limit), SKIPPED(n) (n tests skipped), SKIPPED(budget).
  step() {
    local name="$1" limit="$2"
    shift 3
    local left optional=0
    [[ "${optional_steps}" == *" ${name} "* ]] && optional=1
    left="$(seconds_left)"
    if ((left < 15)); then
      rows+=("$(printf '%-34s %-12s' "${name}" 'SKIPPED(budget)')")
      ((optional)) || failed_steps+=("${name}")
      write_summary
      return 0
    fi
    local cut=0
    ((limit > left)) && limit="${left}" && cut=1
    local start end rc
    start="$(date +%s)"
    log "step ${name} (limit ${limit} s): $*"
    timeout --kill-after=5 "${limit}" "$@" >"${results}/current.log" 2>&1
    rc=$?
    end="$(date +%s)"
    mv -f "${results}/current.log" "${logs}/${name}.log"
    local status=pass
    ((rc != 0)) && status="FAIL(rc=${rc})"
    if ((rc == 124 || rc == 137)); then
      status=TIMEOUT
      ((cut)) && status="CUT(budget)"
    fi
    # A gtest binary whose tests all skip exits 0: a skip here means the
    # device, the toolkit or the bundle was not usable, so it counts as a fail.
    local skipped
    skipped="$(grep -cE '^\[ +SKIPPED +\] .* \([0-9]+ ms\)$' "${logs}/${name}.log" 2>/dev/null)"
    [[ "${status}" == pass && "${skipped:-0}" -gt 0 ]] && status="SKIPPED(${skipped})"
    # An optional step cut by the budget is not a failure; anything else is.
    if [[ "${status}" != pass ]] && { ! ((optional)) || [[ "${status}" != "CUT(budget)" ]]; }; then
      failed_steps+=("${name}")
    fi
    rows+=("$(printf '%-34s %-12s %5ss  %s' "${name}" "${status}" "$((end - start))" "$(grep -v '^\s*$' "${logs}/${name}.log" | tail -n 1 | cut -c1-80)")")
    if [[ "${name}" == test-* ]]; then
      grep -E '^\[ +(OK|FAILED|SKIPPED) +\] .* \([0-9]+ ms\)$' "${logs}/${name}.log" \
        >>"${logs}/test-results.txt" || true
    fi
    write_summary
    return ${rc}
  }

  # Most valuable first; limits ~3x the expected time on an H100/H200
  # (scripts/README.md has the table). The budget may cut only the last.
  step device-info 40 -- bash -c 'device_info "$1"' device_info "${py_ld}"
  # Only the compile service's own refusal ("compile worker cannot serve:
  # file-system sandbox: ..." or "...: seccomp: ..."), not any failure whose
  # text names a namespace (an NVRTC error about namespace cub would).
  local sandbox_refusal='compile worker cannot serve: (file-system sandbox|seccomp)'
  if ! step smoke 20 -- bash -c smoke &&
    grep -qE "^> compile FAILED: .*${sandbox_refusal}" "${logs}/smoke.log"; then
    # The compile sandbox cannot be built here (gVisor has no Landlock, and
    # its mount namespaces may not do what the sandbox needs): without it
    # every engine-level step would skip. This check compiles only its own
    # kernels, so it runs on without the sandbox, and says so first.
    export KERNELEVAL_UNSANDBOXED_COMPILE_FOR_TRUSTED_SOURCES=1
    echo "> compile sandbox NOT available here ($(grep -oE -m 1 "${sandbox_refusal}.*" \
      "${logs}/smoke.log" | cut -c1-120)): the steps below compile this check's own kernels" \
      "(the exploit suite's included) with KERNELEVAL_UNSANDBOXED_COMPILE_FOR_TRUSTED_SOURCES=1" \
      >"${logs}/sandbox-fallback.log"
    step smoke-unsandboxed 20 -- bash -c smoke
  fi
  step timing-probe 45 -- kerneleval_cuda_timing_probe --calibrate --json "${results}/probe.json"
  (($? == 3)) && no_device=1
  # Without probe.json (the probe failed) it still times torch's library
  # operations at the probe's default sizes.
  local probe_args=()
  [[ -f "${results}/probe.json" ]] && probe_args=(--probe "${results}/probe.json")
  step torch-crosscheck 60 -- "${python[@]}" "${bundle_dir}/torch_crosscheck.py" "${probe_args[@]}" \
    --out "${results}/crosscheck.json"
  # The issue's acceptance figures (roofline, self-speedup, timeouts).
  [[ -x "${bundle_dir}/gpu-tests/engine_gpu_test" ]] &&
    step test-engine_gpu_test 150 -- "${bundle_dir}/gpu-tests/engine_gpu_test" --gtest_color=no
  # Evaluation cost and self-speedup spread per problem, on the GPU only (a
  # CPU fallback would measure the emulation), leaving the expected time of
  # the steps after it (~140 s).
  if [[ -x "${bundle_dir}/bin/bench_eval" ]]; then
    local eval_seconds=$(($(seconds_left) - 140))
    ((eval_seconds > 90)) && eval_seconds=90
    ((eval_seconds < 20)) && eval_seconds=20
    step bench-eval $((eval_seconds + 30)) -- bench_eval --backend cuda --max-seconds "${eval_seconds}" \
      --json "${results}/bench_eval.json"
  fi
  [[ -x "${bundle_dir}/gpu-tests/cuda_gpu_test" ]] &&
    step test-cuda_gpu_test 90 -- "${bundle_dir}/gpu-tests/cuda_gpu_test" --gtest_color=no
  [[ -x "${bundle_dir}/gpu-tests/exploits_gpu_test" ]] &&
    step test-exploits_gpu_test 60 -- "${bundle_dir}/gpu-tests/exploits_gpu_test" --gtest_color=no
  # What a CUDA context per program would cost (creation, memory, switching):
  # the figure that decides whether to isolate a group's programs
  # (evaluator/cuda/README.md, "Not closed").
  step context-cost 20 -- "${python[@]}" "${bundle_dir}/context_cost.py" --out "${results}/context_cost.json"
  local test
  for test in "${bundle_dir}"/gpu-tests/*; do
    case "$(basename "${test}")" in
      cuda_gpu_test | engine_gpu_test | exploits_gpu_test | problems_solutions_gpu_test) continue ;;
    esac
    step "test-$(basename "${test}")" 150 -- "${test}" --gtest_color=no
  done
  # Last, with what is left: a fixed subset of the solutions suite.
  if [[ -x "${bundle_dir}/gpu-tests/problems_solutions_gpu_test" ]]; then
    local solutions="${GPU_CHECK_SOLUTIONS:-${DEFAULT_SOLUTIONS}}" filter="*"
    [[ "${solutions}" != all ]] &&
      filter="$(tr ',' '\n' <<<"${solutions}" | sed 's|^|*/|' | paste -sd ':')"
    step test-problems_solutions_gpu_test 300 -- "${bundle_dir}/gpu-tests/problems_solutions_gpu_test" \
      --gtest_color=no "--gtest_filter=${filter}"
  fi
  # bench_compile, cpu_backend_bench and kerneleval_server_bench measure
  # nothing about the GPU: they run on the build machine and are not bundled.
  local rc=0 meaning="every step passed"
  if ((no_device)); then
    rc=3 meaning="no CUDA device (the probe found no driver or device)"
  elif ((${#failed_steps[@]})); then
    rc=1 meaning="failed: ${failed_steps[*]}"
  fi
  rows+=("" "exit ${rc}: ${meaning}")
  write_summary
  rm -rf "${logs}"
  cat "${summary}"
  return "${rc}"
}

case "${1:-}" in
  bundle) [[ $# -eq 2 ]] || usage; bundle "$2" ;;
  run) [[ $# -eq 3 ]] || usage; run "$2" "$3" ;;
  *) usage ;;
esac
