// Registers `kerneleval-worker cuda` (see cuda_worker.h).
#include "evaluator/cuda/cuda_worker.h"
#include "evaluator/worker/worker_mode.h"

KERNELEVAL_WORKER_MODE("cuda", ::kerneleval::cuda::CudaWorkerMain);
