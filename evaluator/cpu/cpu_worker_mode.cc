// Registers `kerneleval-worker cpu` (see cpu_worker.h).
#include "evaluator/cpu/cpu_worker.h"
#include "evaluator/worker/worker_mode.h"

KERNELEVAL_WORKER_MODE("cpu", ::kerneleval::cpu::CpuWorkerMain);
