#!/usr/bin/env bash
# GPU checks in two halves (see scripts/README.md):
#
#   scripts/gpu-check.sh bundle OUT_DIR        on a build machine (no GPU needed)
#   scripts/gpu-check.sh run BUNDLE_DIR RESULTS_DIR   on the GPU machine
#
# bundle: builds what is needed (in $KERNELEVAL_BUILD_DIR, default build-cuda)
#   and copies into OUT_DIR the binaries (kerneleval, kerneleval-server,
#   kerneleval-worker, every ctest executable labelled "gpu", the bench
#   binaries), the shared libraries they need that the GPU machine may lack
#   (everything ldd finds except glibc and the CUDA driver/toolkit libraries,
#   which the GPU machine has), problems/ and the data files, plus env.sh
#   (LD_LIBRARY_PATH, KERNELEVAL_WORKER, ...). Debug info is stripped; the
#   bundle must stay under 64 MiB (checked, and printed).
# run: the timing probe, scripts/torch_crosscheck.py, scripts/context_cost.py,
#   every bundled gpu test binary and bench_eval, within GPU_CHECK_BUDGET
#   seconds (default 420); each step is logged and the next runs even if it
#   failed; a test binary whose tests skipped counts as failed. RESULTS_DIR
#   gets summary.txt, probe.json, crosscheck.json, context_cost.json,
#   bench_eval.json and logs.tar.gz, rewritten after every step (few files:
#   the device tool returns at most 8).
set -uo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_DIR="$(cd "${SCRIPT_DIR}/.." && pwd)"
MAX_BUNDLE_BYTES=$((64 * 1024 * 1024))

usage() {
  sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
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
  local wanted=(kerneleval kerneleval-server kerneleval-worker kerneleval_cuda_test_worker
                kerneleval_cuda_timing_probe)
  # Every executable in bench/ and every test executable labelled gpu.
  while read -r t; do wanted+=("$t"); done < <(printf '%s\n' "${all_targets}" |
    grep -E '(^|/)(bench_|kerneleval_.*bench|.*_bench$)' || true)
  # GPU test executables must exist before ctest can list their tests (and
  # labels): build the ones whose names say gpu first.
  while read -r t; do wanted+=("$t"); done < <(printf '%s\n' "${all_targets}" | grep -iE 'gpu' | grep -vE '(peaks|[.])' || true)
  local built=() failed=()
  for target in "${wanted[@]}"; do
    if ! printf '%s\n' "${all_targets}" | grep -qx "${target}"; then continue; fi
    if cmake --build "${build}" -j "${jobs}" --target "${target}" >"/tmp/gpu-check-build-${target}.log" 2>&1; then
      built+=("${target}")
    else
      failed+=("${target}")
      log "target ${target} failed to build (see /tmp/gpu-check-build-${target}.log)"
    fi
  done
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
  mkdir -p "${out}/bin" "${out}/lib" "${out}/share" "${out}/gpu-tests"
  # Only what built now: a stale binary from an earlier build would test old code.
  local executables=()
  # Every gpu test goes to gpu-tests/ below, not also to bin/ (the bundle's 64 MiB).
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

  # env.sh: what the binaries need at run time on the GPU machine.
  local worker=kerneleval-worker
  [[ -x "${out}/bin/kerneleval-worker" ]] || worker=kerneleval_cuda_test_worker
  cat >"${out}/env.sh" <<EOF
# Source me: sets up the bundled binaries on the GPU machine.
KE_BUNDLE="\$(cd "\$(dirname "\${BASH_SOURCE[0]}")" && pwd)"
export KE_BUNDLE
# The CUDA toolkit: KERNELEVAL_CUDA_HOME, CUDA_HOME or CUDA_PATH if set, else
# from nvcc on the PATH, else the usual place. Its headers serve NVRTC; its
# libnvrtc is found below it.
ke_cuda="\${KERNELEVAL_CUDA_HOME:-\${CUDA_HOME:-\${CUDA_PATH:-}}}"
if [[ -z "\${ke_cuda}" ]] && command -v nvcc >/dev/null 2>&1; then
  ke_cuda="\$(dirname "\$(dirname "\$(readlink -f "\$(command -v nvcc)")")")"
fi
: "\${ke_cuda:=/usr/local/cuda}"
export KERNELEVAL_CUDA_HOME="\${ke_cuda}"
ke_nvrtc="\$(find -L "\${ke_cuda}" -maxdepth 4 -name 'libnvrtc.so.*' 2>/dev/null | head -n 1)"
ke_nvrtc_dir="\${ke_nvrtc:+\$(dirname "\${ke_nvrtc}")}"
# Bundled libraries first, then the toolkit's (nvrtc) and the driver's.
export LD_LIBRARY_PATH="\${KE_BUNDLE}/lib:\${ke_nvrtc_dir:+\${ke_nvrtc_dir}:}\${ke_cuda}/lib64:\${ke_cuda}/lib:/usr/local/nvidia/lib64:/usr/local/nvidia/lib\${LD_LIBRARY_PATH:+:\${LD_LIBRARY_PATH}}"
unset ke_cuda ke_nvrtc ke_nvrtc_dir
export PATH="\${KE_BUNDLE}/bin:\${PATH}"
export KERNELEVAL_WORKER="\${KE_BUNDLE}/bin/${worker}"
export KERNELEVAL_PROBLEMS_DIR="\${KE_BUNDLE}/share/problems"
export KERNELEVAL_INCLUDE_DIR="\${KE_BUNDLE}/share/compile/include"
export KERNELEVAL_CPU_PRELUDE_DIR="\${KE_BUNDLE}/share/cpu/prelude"
# A check is scarce: on a driver older than the toolkit that built the bundle
# (refused at load otherwise; device-info shows its version) it tries anyway.
export KERNELEVAL_CUDA_ALLOW_OLDER_DRIVER="\${KERNELEVAL_CUDA_ALLOW_OLDER_DRIVER:-1}"
EOF
  {
    echo "built from: $(git -C "${REPO_DIR}" rev-parse HEAD 2>/dev/null) ($(date -u +%FT%TZ))"
    echo "worker: ${worker}"
    echo "targets built: ${built[*]:-}"
    echo "targets that failed to build: ${failed[*]:-none}"
    echo "files:"
    printf '  %s\n' "${copied[@]}"
  } >"${out}/MANIFEST"

  local bytes
  bytes="$(du -sb "${out}" | cut -f1)"
  log "bundle: ${out}: $((bytes / 1024 / 1024)) MiB (${bytes} bytes), ${#copied[@]} executables, $(ls "${out}/lib" | wc -l) libraries"
  [[ ${#failed[@]} -gt 0 ]] && log "not built: ${failed[*]}"
  if ((bytes > MAX_BUNDLE_BYTES)); then
    log "ERROR: the bundle is over 64 MiB"
    return 1
  fi
  return 0
}

# --------------------------------------------------------------------- run

run() {
  local bundle_dir results
  bundle_dir="$(cd "$1" && pwd)" || { log "no bundle at $1"; return 2; }
  mkdir -p "$2" && results="$(cd "$2" && pwd)"
  # Logs live outside RESULTS_DIR (the device tool returns at most 8 files)
  # and are packed into logs.tar.gz after every step.
  local logs
  logs="$(mktemp -d /tmp/gpu-check-logs.XXXXXX)"
  # A transfer may drop execute bits.
  chmod +x "${bundle_dir}"/bin/* "${bundle_dir}"/gpu-tests/* 2>/dev/null || true
  # shellcheck source=/dev/null
  source "${bundle_dir}/env.sh"
  local summary="${results}/summary.txt"
  : >"${summary}"
  local -a rows=()
  # The whole run stays inside GPU_CHECK_BUDGET seconds (default 420): each
  # step's timeout is cut to what is left, steps that would start with less
  # than 15 s are skipped, and the summary is rewritten after every step, so
  # a run killed at the device tool's limit still leaves its results.
  local deadline=$(($(date +%s) + ${GPU_CHECK_BUDGET:-420}))
  seconds_left() { echo $((deadline - $(date +%s) - 10)); }

  write_summary() {
    {
      echo "kerneleval gpu-check: $(date -u +%FT%TZ) on $(hostname)"
      head -n 3 "${bundle_dir}/MANIFEST"
      echo
      printf '%-34s %-12s %6s  %s\n' step status time "last line of its log"
      printf '%s\n' "${rows[@]}"
      echo
      if [[ -f "${logs}/test-results.txt" ]]; then
        echo "gpu tests: $(grep -c '^\[ *OK' "${logs}/test-results.txt") passed," \
          "$(grep -c '^\[ *FAILED' "${logs}/test-results.txt") failed," \
          "$(grep -c '^\[ *SKIPPED' "${logs}/test-results.txt") skipped"
        grep -E '^\[ *(FAILED|SKIPPED)' "${logs}/test-results.txt" | sed 's/^/  /'
        # Why tests skipped (the first reason of each binary).
        grep -h -m 1 -B 1 -E '^\[ +SKIPPED +\]' "${logs}"/test-*.log 2>/dev/null | grep -v '^\[' |
          grep -v '^--$' | sed 's/^/  skip reason: /' | head -n 8
      fi
      for name in device-info timing-probe torch-crosscheck context-cost; do
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
    } >"${summary}"
    tar -czf "${results}/logs.tar.gz" -C "${logs}" . 2>/dev/null || true
  }

  # step NAME [LIMIT] -- COMMAND...: runs with a timeout (LIMIT seconds, cut
  # to the budget), logs to NAME.log, records its status, carries on.
  step() {
    local name="$1" limit="$2"
    shift 3
    local left
    left="$(seconds_left)"
    if ((left < 15)); then
      rows+=("$(printf '%-34s %-12s' "${name}" 'SKIPPED(budget)')")
      write_summary
      return 0
    fi
    ((limit > left)) && limit="${left}"
    local start end rc
    start="$(date +%s)"
    log "step ${name} (limit ${limit} s): $*"
    timeout --kill-after=5 "${limit}" "$@" >"${logs}/${name}.log" 2>&1
    rc=$?
    end="$(date +%s)"
    local status=pass
    ((rc != 0)) && status="FAIL(rc=${rc})"
    ((rc == 124 || rc == 137)) && status="TIMEOUT"
    # A gtest binary whose tests all skip exits 0: a skip here means the
    # device, the toolkit or the bundle was not usable, so it counts as a fail.
    local skipped
    skipped="$(grep -cE '^\[ +SKIPPED +\] .* \([0-9]+ ms\)$' "${logs}/${name}.log" 2>/dev/null)"
    [[ "${status}" == pass && "${skipped:-0}" -gt 0 ]] && status="SKIPPED(${skipped})"
    rows+=("$(printf '%-34s %-12s %5ss  %s' "${name}" "${status}" "$((end - start))" "$(tail -n 1 "${logs}/${name}.log" | cut -c1-80)")")
    if [[ "${name}" == test-* ]]; then
      grep -E '^\[ +(OK|FAILED|SKIPPED) +\] .* \([0-9]+ ms\)$' "${logs}/${name}.log" \
        >>"${logs}/test-results.txt" || true
    fi
    write_summary
    return ${rc}
  }

  # What the machine is and how the toolkit was found (diagnoses a run whose
  # binaries could not start).
  step device-info 30 -- bash -c 'nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv; nvidia-smi -q -d CLOCK,PERFORMANCE | head -n 40;
    echo "nvcc: $(command -v nvcc)"; echo "KERNELEVAL_CUDA_HOME=${KERNELEVAL_CUDA_HOME}"; echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH}";
    ldd "${KERNELEVAL_WORKER}" | grep -E "nvrtc|not found"; ls "${KERNELEVAL_CUDA_HOME}/include/cuda_runtime.h";
    env LD_LIBRARY_PATH="${LD_LIBRARY_PATH#${KE_BUNDLE}/lib:}" python3 -c "import torch; print(\"torch\", torch.__version__, torch.cuda.is_available())" || echo "torch: not importable";
    env LD_LIBRARY_PATH="${LD_LIBRARY_PATH#${KE_BUNDLE}/lib:}" python3 -c "import cupy; print(\"cupy\", cupy.__version__)" || echo "cupy: not importable (the cross-check needs it)"'
  # The most important first: the timing probe and its PyTorch cross-check,
  # then the GPU suites, the evaluation benchmark, and the long solutions
  # suite last (the budget may cut it).
  step timing-probe 150 -- kerneleval_cuda_timing_probe --calibrate --json "${results}/probe.json"
  # Without probe.json (the probe failed) it still times torch's library
  # operations at the probe's default sizes.
  local probe_args=()
  [[ -f "${results}/probe.json" ]] && probe_args=(--probe "${results}/probe.json")
  # Python gets the machine's own libraries, not the bundle's.
  step torch-crosscheck 90 -- env LD_LIBRARY_PATH="${LD_LIBRARY_PATH#"${KE_BUNDLE}/lib:"}" PYTHONUNBUFFERED=1 \
    python3 "${bundle_dir}/torch_crosscheck.py" "${probe_args[@]}" --out "${results}/crosscheck.json"
  # What a CUDA context per program would cost (creation, memory, switching):
  # the figure that decides whether to isolate a group's programs
  # (evaluator/cuda/README.md, "Not closed").
  step context-cost 60 -- env LD_LIBRARY_PATH="${LD_LIBRARY_PATH#"${KE_BUNDLE}/lib:"}" \
    python3 "${bundle_dir}/context_cost.py" --out "${results}/context_cost.json"
  local test
  for test in cuda_gpu_test engine_gpu_test exploits_gpu_test; do
    [[ -x "${bundle_dir}/gpu-tests/${test}" ]] || continue
    step "test-${test}" 150 -- "${bundle_dir}/gpu-tests/${test}" --gtest_color=no
  done
  # Evaluation cost and self-speedup spread per problem, on the GPU only (a CPU
  # fallback would measure the emulation), inside what is left.
  if [[ -x "${bundle_dir}/bin/bench_eval" ]]; then
    local eval_seconds=$(($(seconds_left) - 60))
    ((eval_seconds > 120)) && eval_seconds=120
    ((eval_seconds < 20)) && eval_seconds=20
    step bench-eval $((eval_seconds + 45)) -- bench_eval --backend cuda --max-seconds "${eval_seconds}" \
      --json "${results}/bench_eval.json"
  fi
  for test in "${bundle_dir}"/gpu-tests/*; do
    case "$(basename "${test}")" in
      cuda_gpu_test | engine_gpu_test | exploits_gpu_test) continue ;;
    esac
    step "test-$(basename "${test}")" 300 -- "${test}" --gtest_color=no
  done
  # bench_compile, cpu_backend_bench and kerneleval_server_bench measure
  # nothing about the GPU: they run on the build machine, not here.
  write_summary
  rm -rf "${logs}"
  cat "${summary}"
  # Failing when any step failed, so a caller can tell at a glance.
  printf '%s\n' "${rows[@]}" | grep -qE 'FAIL|TIMEOUT|SKIPPED' && return 1
  return 0
}

case "${1:-}" in
  bundle) [[ $# -eq 2 ]] || usage; bundle "$2" ;;
  run) [[ $# -eq 3 ]] || usage; run "$2" "$3" ;;
  *) usage ;;
esac
