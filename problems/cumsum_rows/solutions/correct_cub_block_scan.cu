// expect: pass
// CUB: tiles of 512 loaded (warp transpose), scanned with BlockScan and a
// running-prefix callback carrying the row's sum across tiles, stored back.
// Runs on the CPU backend through its CUB emulation (kerneleval_cpu_cub.h).
// @launch cumsum_kernel<<<ROWS, 128>>>(x, y, ROWS, COLS)
#include <cub/block/block_scan.cuh>
#include <cub/block/block_load.cuh>
#include <cub/block/block_store.cuh>
struct RunningPrefix {
  float total;
  __device__ float operator()(float block_aggregate) {
    float old = total;
    total += block_aggregate;
    return old;
  }
};
__global__ void cumsum_kernel(const float* x, float* y, int rows, int cols) {
  constexpr int kThreads = 128, kItems = 4, kTile = kThreads * kItems;
  using Load = cub::BlockLoad<float, kThreads, kItems, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
  using Store = cub::BlockStore<float, kThreads, kItems, cub::BLOCK_STORE_TRANSPOSE>;
  using Scan = cub::BlockScan<float, kThreads>;
  __shared__ union { typename Load::TempStorage load; typename Store::TempStorage store; typename Scan::TempStorage scan; } temp;
  const float* in = x + (long long)blockIdx.x * cols;
  float* out = y + (long long)blockIdx.x * cols;
  RunningPrefix prefix{0.0f};
  for (int t = 0; t < cols; t += kTile) {
    int valid = min(kTile, cols - t);
    float items[kItems];
    Load(temp.load).Load(in + t, items, valid, 0.0f);
    __syncthreads();
    Scan(temp.scan).InclusiveSum(items, items, prefix);
    __syncthreads();
    Store(temp.store).Store(out + t, items, valid);
    __syncthreads();
  }
}
