// Registers `kerneleval-worker cpu` (cpu_worker.h) and `kerneleval-worker
// cpu-runner` (runner.h), the process the cpu worker runs kernels in.
#include "evaluator/cpu/cpu_worker.h"
#include "evaluator/cpu/runner.h"
#include "evaluator/worker/worker_mode.h"

KERNELEVAL_WORKER_MODE("cpu", ::kerneleval::cpu::CpuWorkerMain);
KERNELEVAL_WORKER_MODE("cpu-runner", ::kerneleval::cpu::CpuRunnerMain);
