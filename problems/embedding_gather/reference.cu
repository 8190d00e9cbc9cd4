// Reference for embedding_gather: y[b, :] = weight[indices[b], :] for b in [0, B).
//
// Memory-bound. One block of 128 threads per output row (a grid-stride loop
// over rows when B exceeds the grid): the row index is read once, then the
// D values are copied as float4 when the source and destination rows are
// 16-byte aligned (D % 4 == 0), element by element otherwise.
__global__ void __launch_bounds__(128)
    embedding_gather_kernel(const float* __restrict__ weight, const long long* __restrict__ indices,
                            float* __restrict__ y, int batch, int dim) {
  for (int b = blockIdx.x; b < batch; b += gridDim.x) {
    const long long index = indices[b];
    const float* src = weight + index * dim;
    float* dst = y + static_cast<long long>(b) * dim;
    int scalar_begin = 0;
    if (((reinterpret_cast<unsigned long long>(src) | reinterpret_cast<unsigned long long>(dst)) &
         15ull) == 0) {
      const int vectors = dim / 4;
      const float4* src4 = reinterpret_cast<const float4*>(src);
      float4* dst4 = reinterpret_cast<float4*>(dst);
      for (int i = threadIdx.x; i < vectors; i += blockDim.x) dst4[i] = src4[i];
      scalar_begin = vectors * 4;
    }
    for (int i = scalar_begin + threadIdx.x; i < dim; i += blockDim.x) dst[i] = src[i];
  }
}
