// CUB's block- and warp-wide collectives for the CPU backend.
//
// Every `#include <cub/...>` line of a submission becomes an include of this
// header (after kerneleval_cpu_prelude.h). CUB itself is warp-synchronous PTX;
// this is an emulation of its collectives with CCCL 3.0.1's API (the
// submission was compiled by NVRTC against the real CUB first, so its calls
// name real overloads).
//
// Emulated: BlockReduce, BlockScan, BlockLoad, BlockStore, BlockExchange,
// BlockRadixSort, WarpReduce, WarpScan, the LoadDirect* / StoreDirect* free
// functions, ThreadReduce, ThreadLoad / ThreadStore,
// CacheModifiedInputIterator, NullType, Uninitialized, RowMajorTid,
// KeyValuePair, ArgMax, ArgMin, ShuffleUp/Down/Index. The other
// facilities cub.cuh declares (BlockHistogram, BlockMergeSort, Device*, ...)
// are declared so that using one fails to compile with a static_assert that
// says so. CCCL 3 has no cub::Sum/Max/Min: kernels pass libcu++'s
// cuda::std::plus<>, cuda::maximum<>, cuda::minimum<> (included below).
//
// How a collective runs: a block collective's threads write their values to
// the TempStorage, meet at a barrier (__syncthreads: every thread of the block
// must reach it, as on a GPU), each computes its result from the storage, and
// they meet again so that the storage may be reused at once (a GPU kernel
// needs its own __syncthreads() before reuse; here reuse without one is
// caught only where results are read after the second barrier: BlockScan's
// running prefixes, which a following collective through the same union
// overwrites). Thread 0 computes the whole-block result (BlockScan's running
// prefixes, BlockRadixSort's order); the others read it after the barrier.
// A warp collective does the same through per-block scratch indexed by the
// linear thread index (the caller's TempStorage is not needed: CUB's
// shuffle-based warp collectives do not use theirs either), meeting its
// logical warp's lanes with __syncwarp.
//
// Values a GPU leaves undefined are not made correct here (a kernel that reads
// them must fail as on a GPU); they are what CUB's shuffle code computes:
//  - BlockReduce: the aggregate is defined in thread 0 only. Every other
//    thread (of the first num_valid) gets the reduction of the inputs of its
//    own warp from itself to the warp's last (valid) thread, as CUB's
//    shfl_down warp reduction leaves it: lane 0 of warp w holds warp w's
//    aggregate, lane 31 its own input. Threads past num_valid get their input.
//  - WarpReduce: likewise, lane i of a logical warp gets the reduction of
//    lanes i..last valid lane; only lane 0's is the aggregate.
//  - Head/TailSegmentedReduce: lane i gets the reduction from itself to the
//    end of its segment (CUB 3.0.1's shuffle code, for either flag kind): the
//    segment's aggregate is in the segment's FIRST lane. (CUB's documentation
//    says tail-segmented results land in the tail lane; its code puts them in
//    the first lane after the previous tail, and so does this emulation.)
//  - ExclusiveScan without an initial value: thread/lane 0's output is its own
//    input (WarpScan with cuda::std::plus<> on an integer type: 0, as CUB's
//    `inclusive - input` specialisation gives); with ITEMS_PER_THREAD items,
//    thread 0's first output is its items' reduction.
//
// A block collective whose launch shape differs from its template's
// (blockDim.x/y/z vs BLOCK_DIM_X/Y/Z) ends the run with a message naming both
// (CUB's thread index would be wrong on a GPU); BlockLoad/BlockStore's
// direct, striped and vectorized algorithms, which do not cooperate, are
// exempt and compute what a GPU computes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <cuda/functional>
#include <cuda/std/functional>
#include <cuda/std/limits>
#include <cuda/std/type_traits>
#include <cuda/std/utility>
#include <type_traits>
#include <utility>
#include <vector>

namespace cub {

// ---- util_type.cuh
struct NullType {
  using value_type = NullType;
  NullType() = default;
  template <typename T>
  explicit NullType(const T&) {}
  template <typename T>
  NullType& operator=(const T&) {
    return *this;
  }
  friend bool operator==(const NullType&, const NullType&) { return true; }
  friend bool operator!=(const NullType&, const NullType&) { return false; }
};

template <typename T>
struct Uninitialized {
  alignas(T) unsigned char storage[sizeof(T)];
  T& Alias() { return *reinterpret_cast<T*>(this); }
};

template <int N>
struct PowerOfTwo {
  enum { VALUE = ((N & (N - 1)) == 0) };
};

enum BlockReduceAlgorithm {
  BLOCK_REDUCE_RAKING_COMMUTATIVE_ONLY,
  BLOCK_REDUCE_RAKING,
  BLOCK_REDUCE_WARP_REDUCTIONS,
};
enum BlockScanAlgorithm {
  BLOCK_SCAN_RAKING,
  BLOCK_SCAN_RAKING_MEMOIZE,
  BLOCK_SCAN_WARP_SCANS,
};
enum BlockLoadAlgorithm {
  BLOCK_LOAD_DIRECT,
  BLOCK_LOAD_STRIPED,
  BLOCK_LOAD_VECTORIZE,
  BLOCK_LOAD_TRANSPOSE,
  BLOCK_LOAD_WARP_TRANSPOSE,
  BLOCK_LOAD_WARP_TRANSPOSE_TIMESLICED,
};
enum BlockStoreAlgorithm {
  BLOCK_STORE_DIRECT,
  BLOCK_STORE_STRIPED,
  BLOCK_STORE_VECTORIZE,
  BLOCK_STORE_TRANSPOSE,
  BLOCK_STORE_WARP_TRANSPOSE,
  BLOCK_STORE_WARP_TRANSPOSE_TIMESLICED,
};
enum BlockHistogramAlgorithm { BLOCK_HISTO_SORT, BLOCK_HISTO_ATOMIC };
enum WarpExchangeAlgorithm { WARP_EXCHANGE_SMEM, WARP_EXCHANGE_SHUFFLE };
enum WarpLoadAlgorithm {
  WARP_LOAD_DIRECT,
  WARP_LOAD_STRIPED,
  WARP_LOAD_VECTORIZE,
  WARP_LOAD_TRANSPOSE
};
enum WarpStoreAlgorithm {
  WARP_STORE_DIRECT,
  WARP_STORE_STRIPED,
  WARP_STORE_VECTORIZE,
  WARP_STORE_TRANSPOSE
};
enum CacheLoadModifier {
  LOAD_DEFAULT,
  LOAD_CA,
  LOAD_CG,
  LOAD_CS,
  LOAD_CV,
  LOAD_LDG,
  LOAD_VOLATILE,
};
enum CacheStoreModifier {
  STORE_DEFAULT,
  STORE_WB,
  STORE_CG,
  STORE_CS,
  STORE_WT,
  STORE_VOLATILE,
};

// ---- util_ptx.cuh
inline int RowMajorTid(int block_dim_x, int block_dim_y, int block_dim_z) {
  return ((block_dim_z == 1) ? 0 : (static_cast<int>(threadIdx.z) * block_dim_x * block_dim_y)) +
         ((block_dim_y == 1) ? 0 : (static_cast<int>(threadIdx.y) * block_dim_x)) +
         static_cast<int>(threadIdx.x);
}

// CUB's shuffles of any value, word by word as CUB does, with its lane
// rules (PTX shfl.sync): a logical warp of LOGICAL_WARP_THREADS lanes; up
// reads lane - src_offset unless that is before the warp's first_thread,
// down lane + src_offset unless past its last_thread, index the warp's
// src_lane; a lane out of range keeps its own value.
namespace kerneleval_detail {
template <class T>
inline T ShuffleWords(T input, int src_lane, unsigned member_mask) {
  constexpr int kWords = static_cast<int>((sizeof(T) + sizeof(unsigned) - 1) / sizeof(unsigned));
  unsigned words[kWords] = {};
  __builtin_memcpy(static_cast<void*>(words), static_cast<const void*>(&input), sizeof(T));
  for (int w = 0; w < kWords; ++w) words[w] = __shfl_sync(member_mask, words[w], src_lane);
  T output;
  __builtin_memcpy(static_cast<void*>(&output), static_cast<const void*>(words), sizeof(T));
  return output;
}
template <int L>
inline constexpr bool kIsLogicalWarp = L >= 1 && L <= 32 && (L & (L - 1)) == 0;
inline int HardwareLane() {
  return static_cast<int>(kerneleval_cpu::detail::LinearThreadIndex() & 31u);
}
}  // namespace kerneleval_detail

template <int LOGICAL_WARP_THREADS, typename T>
inline T ShuffleUp(T input, int src_offset, int first_thread, unsigned int member_mask) {
  static_assert(kerneleval_detail::kIsLogicalWarp<LOGICAL_WARP_THREADS>,
                "cub::ShuffleUp: LOGICAL_WARP_THREADS must be a power of two up to 32");
  const int lane = kerneleval_detail::HardwareLane();
  const int first =
      (lane & ~(LOGICAL_WARP_THREADS - 1)) | (first_thread & (LOGICAL_WARP_THREADS - 1));
  const int source = lane - src_offset;
  return kerneleval_detail::ShuffleWords(input, source >= first ? source : lane, member_mask);
}
template <int LOGICAL_WARP_THREADS, typename T>
inline T ShuffleDown(T input, int src_offset, int last_thread, unsigned int member_mask) {
  static_assert(kerneleval_detail::kIsLogicalWarp<LOGICAL_WARP_THREADS>,
                "cub::ShuffleDown: LOGICAL_WARP_THREADS must be a power of two up to 32");
  const int lane = kerneleval_detail::HardwareLane();
  const int last =
      (lane & ~(LOGICAL_WARP_THREADS - 1)) | (last_thread & (LOGICAL_WARP_THREADS - 1));
  const int source = lane + src_offset;
  return kerneleval_detail::ShuffleWords(input, source <= last ? source : lane, member_mask);
}
template <int LOGICAL_WARP_THREADS, typename T>
inline T ShuffleIndex(T input, int src_lane, unsigned int member_mask) {
  static_assert(kerneleval_detail::kIsLogicalWarp<LOGICAL_WARP_THREADS>,
                "cub::ShuffleIndex: LOGICAL_WARP_THREADS must be a power of two up to 32");
  const int lane = kerneleval_detail::HardwareLane();
  return kerneleval_detail::ShuffleWords(
      input, (lane & ~(LOGICAL_WARP_THREADS - 1)) | (src_lane & (LOGICAL_WARP_THREADS - 1)),
      member_mask);
}

// ---- util_type.cuh / thread_operators.cuh: a key with its value, and the
// arg-max / arg-min operators (ties keep the smaller key), as CCCL's.
template <typename _Key, typename _Value>  // NOLINT(bugprone-reserved-identifier): CCCL's names
struct KeyValuePair {
  using Key = _Key;
  using Value = _Value;
  Key key;
  Value value;
  KeyValuePair() {}  // NOLINT(modernize-use-equals-default): CCCL's (not trivial)
  KeyValuePair(Key const& key, Value const& value) : key(key), value(value) {}
  bool operator!=(const KeyValuePair& b) { return (value != b.value) || (key != b.key); }
};
struct ArgMax {
  template <typename T, typename OffsetT>
  KeyValuePair<OffsetT, T> operator()(const KeyValuePair<OffsetT, T>& a,
                                      const KeyValuePair<OffsetT, T>& b) const {
    return (b.value > a.value) || ((a.value == b.value) && (b.key < a.key)) ? b : a;
  }
};
struct ArgMin {
  template <typename T, typename OffsetT>
  KeyValuePair<OffsetT, T> operator()(const KeyValuePair<OffsetT, T>& a,
                                      const KeyValuePair<OffsetT, T>& b) const {
    return (b.value < a.value) || ((a.value == b.value) && (b.key < a.key)) ? b : a;
  }
};

// ---- thread_load.cuh / thread_store.cuh: plain accesses (the kernel's own).
template <CacheLoadModifier MODIFIER = LOAD_DEFAULT, typename T>
inline T ThreadLoad(const T* ptr) {
  if constexpr (MODIFIER == LOAD_VOLATILE || MODIFIER == LOAD_CV) {
    return *const_cast<const volatile T*>(ptr);
  } else {
    return *ptr;
  }
}
template <CacheLoadModifier MODIFIER = LOAD_DEFAULT, typename T>
inline T ThreadLoad(T* ptr) {
  return ThreadLoad<MODIFIER>(const_cast<const T*>(ptr));
}
template <CacheStoreModifier MODIFIER = STORE_DEFAULT, typename T>
inline void ThreadStore(T* ptr, T val) {
  if constexpr (MODIFIER == STORE_VOLATILE || MODIFIER == STORE_WT) {
    *const_cast<volatile T*>(ptr) = val;
  } else {
    *ptr = val;
  }
}

template <CacheLoadModifier MODIFIER, typename ValueType, typename OffsetT = ptrdiff_t>
class CacheModifiedInputIterator {
 public:
  using self_type = CacheModifiedInputIterator;
  using difference_type = OffsetT;
  using value_type = ValueType;
  using pointer = ValueType*;
  using reference = ValueType;
  ValueType* ptr;
  template <typename QualifiedValueType>
  CacheModifiedInputIterator(QualifiedValueType* p)  // NOLINT: as CUB's
      : ptr(const_cast<std::remove_cv_t<QualifiedValueType>*>(p)) {}
  self_type operator++(int) {
    self_type r = *this;
    ++ptr;
    return r;
  }
  self_type& operator++() {
    ++ptr;
    return *this;
  }
  reference operator*() const { return ThreadLoad<MODIFIER>(ptr); }
  template <typename Distance>
  self_type operator+(Distance n) const {
    return self_type(ptr + n);
  }
  template <typename Distance>
  self_type& operator+=(Distance n) {
    ptr += n;
    return *this;
  }
  template <typename Distance>
  self_type operator-(Distance n) const {
    return self_type(ptr - n);
  }
  difference_type operator-(self_type other) const { return ptr - other.ptr; }
  template <typename Distance>
  reference operator[](Distance n) const {
    return ThreadLoad<MODIFIER>(ptr + n);
  }
  bool operator==(const self_type& rhs) const { return ptr == rhs.ptr; }
  bool operator!=(const self_type& rhs) const { return ptr != rhs.ptr; }
};

// ---- thread_reduce.cuh (arrays; in order)
template <typename T, int N, typename ReductionOp>
inline T ThreadReduce(const T (&input)[N], ReductionOp reduction_op) {
  T acc = input[0];
  for (int i = 1; i < N; ++i) acc = reduction_op(acc, input[i]);
  return acc;
}
template <typename T, int N, typename ReductionOp, typename PrefixT>
inline T ThreadReduce(const T (&input)[N], ReductionOp reduction_op, PrefixT prefix) {
  T acc = prefix;
  for (int i = 0; i < N; ++i) acc = reduction_op(acc, input[i]);
  return acc;
}

namespace internal {
template <typename T, int N, typename ScanOp>
inline T ThreadScanExclusive(const T (&input)[N], T (&output)[N], ScanOp scan_op, T prefix,
                             bool apply_prefix = true) {
  T inclusive = input[0];
  if (apply_prefix) inclusive = scan_op(prefix, inclusive);
  output[0] = prefix;
  T exclusive = inclusive;
  for (int i = 1; i < N; ++i) {
    inclusive = scan_op(exclusive, input[i]);
    output[i] = exclusive;
    exclusive = inclusive;
  }
  return inclusive;
}
template <typename T, int N, typename ScanOp>
inline T ThreadScanInclusive(const T (&input)[N], T (&output)[N], ScanOp scan_op, T prefix,
                             bool apply_prefix = true) {
  T inclusive = input[0];
  if (apply_prefix) inclusive = scan_op(prefix, inclusive);
  output[0] = inclusive;
  for (int i = 1; i < N; ++i) {
    inclusive = scan_op(inclusive, input[i]);
    output[i] = inclusive;
  }
  return inclusive;
}
}  // namespace internal

// ---- The emulation's machinery.
namespace kerneleval_detail {

template <class...>
inline constexpr bool kUnsupported = false;

// A value's bytes in raw storage and back (the storage is bytes so that every
// TempStorage is trivial and fits in a union, as CUB's Uninitialized<> is).
template <class T>
KERNELEVAL_CPU_UNCHECKED inline void Put(unsigned char* slots, long index, const T& value) {
  __builtin_memcpy(static_cast<void*>(slots + index * static_cast<long>(sizeof(T))),
              static_cast<const void*>(&value), sizeof(T));
}
template <class T>
KERNELEVAL_CPU_UNCHECKED inline T Get(const unsigned char* slots, long index) {
  T value;
  __builtin_memcpy(static_cast<void*>(&value),
              static_cast<const void*>(slots + index * static_cast<long>(sizeof(T))), sizeof(T));
  return value;
}

KERNELEVAL_CPU_UNCHECKED inline int BlockThreads() {
  return static_cast<int>(blockDim.x * blockDim.y * blockDim.z);
}
KERNELEVAL_CPU_UNCHECKED inline int LinearTid() {
  return static_cast<int>(kerneleval_cpu::detail::LinearThreadIndex());
}

// The launch must have the template's shape: CUB numbers the threads by
// BLOCK_DIM_X/Y/Z and exchanges BLOCK_THREADS values.
KERNELEVAL_CPU_UNCHECKED inline void CheckBlockShape(const char* collective, int x, int y, int z) {
  if (static_cast<int>(blockDim.x) == x && static_cast<int>(blockDim.y) == y &&
      static_cast<int>(blockDim.z) == z) {
    return;
  }
  char message[384];
  std::snprintf(message, sizeof(message),
                "%s: the block was launched with blockDim (%u, %u, %u) = %u threads, but the "
                "collective's template says BLOCK_DIM_X/Y/Z = (%d, %d, %d) = %d threads; CUB's "
                "block collectives need the launch to match their template",
                collective, blockDim.x, blockDim.y, blockDim.z,
                blockDim.x * blockDim.y * blockDim.z, x, y, z, x * y * z);
  kerneleval_cpu::detail::Trap(message);
}

[[noreturn]] KERNELEVAL_CPU_UNCHECKED inline void BadRank(const char* what, long rank, long items) {
  char message[256];
  std::snprintf(message, sizeof(message),
                "cub::BlockExchange::%s: rank %ld is outside the tile's [0, %ld) (an out-of-bounds "
                "shared memory write on a GPU)",
                what, rank, items);
  kerneleval_cpu::detail::Trap(message);
}

// ---- Warp collectives: per-block scratch, one slot per thread of the block.
template <class T>
struct WarpSlots {
  alignas(T) unsigned char bytes[1024 * sizeof(T)];
};
template <class T>
inline thread_local WarpSlots<T> warp_slots;
inline thread_local unsigned char warp_flags[1024];

// The caller's logical warp of L lanes: its first thread's linear index, the
// lanes that exist in the block and the caller's lane in it.
struct LogicalWarp {
  int base;       // linear index of lane 0
  int count;      // lanes that exist (the block may end inside the warp)
  int lane;       // the caller's lane
  unsigned mask;  // the lanes, as __syncwarp takes them
};
KERNELEVAL_CPU_UNCHECKED inline LogicalWarp GetLogicalWarp(int L) {
  const int linear = LinearTid();
  const int hw_lane = linear & 31;
  const int lane = hw_lane & (L - 1);
  const int base = linear - lane;
  const int count = std::min(L, BlockThreads() - base);
  const unsigned bits = count >= 32 ? 0xffffffffu : ((1u << count) - 1u);
  return {base, count, lane, bits << (hw_lane - lane)};
}

template <class T>
KERNELEVAL_CPU_UNCHECKED inline void WarpPut(const LogicalWarp& w, const T& value) {
  Put(warp_slots<T>.bytes, w.base + w.lane, value);
}
KERNELEVAL_CPU_UNCHECKED inline void WarpPutFlag(const LogicalWarp& w, bool flag) {
  warp_flags[w.base + w.lane] = flag ? 1 : 0;
}
// op over lanes [first, last] in order.
template <class T, class Op>
KERNELEVAL_CPU_UNCHECKED inline T WarpFold(const LogicalWarp& w, int first, int last, Op& op) {
  const unsigned char* s = warp_slots<T>.bytes;
  T acc = Get<T>(s, w.base + first);
  for (int j = first + 1; j <= last; ++j) acc = op(acc, Get<T>(s, w.base + j));
  return acc;
}
template <class T>
KERNELEVAL_CPU_UNCHECKED inline T WarpGet(const LogicalWarp& w, int lane) {
  return Get<T>(warp_slots<T>.bytes, w.base + lane);
}
// The last lane of the caller's segment: head flags start a segment, tail
// flags end one.
KERNELEVAL_CPU_UNCHECKED inline int SegmentEnd(const LogicalWarp& w, bool head) {
  for (int j = w.lane; j < w.count; ++j) {
    if (head ? (j + 1 < w.count && warp_flags[w.base + j + 1]) : warp_flags[w.base + j]) return j;
  }
  return w.count - 1;
}

inline void MeetWarp(const LogicalWarp& w, int L) {
  if (L > 1) __syncwarp(w.mask);
}

// ---- Radix sort keys: CUB's bit-ordered ("twiddled") key bits.
template <class K>
inline constexpr bool kFloatKey =
    std::is_floating_point_v<K> || std::is_same_v<K, __half> || std::is_same_v<K, __nv_bfloat16>;

template <class K>
KERNELEVAL_CPU_UNCHECKED inline uint64_t OrderedBits(const K& key) {
  static_assert(sizeof(K) <= 8 && (std::is_arithmetic_v<K> || kFloatKey<K>),
                "kerneleval's cub::BlockRadixSort sorts arithmetic keys of at most 64 bits "
                "(__half and __nv_bfloat16 included)");
  uint64_t bits = 0;
  __builtin_memcpy(&bits, static_cast<const void*>(&key), sizeof(K));
  const uint64_t high = uint64_t{1} << (8 * sizeof(K) - 1);
  const uint64_t all = sizeof(K) == 8 ? ~uint64_t{0} : ((uint64_t{1} << (8 * sizeof(K))) - 1);
  if constexpr (kFloatKey<K>) {
    bits ^= (bits & high) ? all : high;
    // CUB's digit extractor maps -0.0 onto +0.0 (BaseDigitExtractor::
    // ProcessFloatMinusZero): the two compare equal and keep their order.
    if (bits == (high ^ all)) bits = high;
  } else if constexpr (std::is_signed_v<K>) {
    bits ^= high;
  }
  return bits;
}

template <class K, class V>
KERNELEVAL_CPU_UNCHECKED inline void SortTile(unsigned char* keys, unsigned char* values, int n,
                                              int begin_bit, int end_bit, bool descending) {
  constexpr int kBits = static_cast<int>(8 * sizeof(K));
  begin_bit = std::max(begin_bit, 0);
  end_bit = std::min(end_bit, kBits);
  if (end_bit <= begin_bit || n <= 1) return;
  const int width = end_bit - begin_bit;
  const uint64_t mask = width >= 64 ? ~uint64_t{0} : ((uint64_t{1} << width) - 1);
  std::vector<std::pair<uint64_t, int>> order(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    order[static_cast<size_t>(i)] = {(OrderedBits(Get<K>(keys, i)) >> begin_bit) & mask, i};
  }
  if (descending) {
    std::stable_sort(order.begin(), order.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
  } else {
    std::stable_sort(order.begin(), order.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
  }
  std::vector<unsigned char> copy(keys, keys + static_cast<size_t>(n) * sizeof(K));
  for (int i = 0; i < n; ++i) {
    __builtin_memcpy(keys + static_cast<size_t>(i) * sizeof(K),
                copy.data() + static_cast<size_t>(order[static_cast<size_t>(i)].second) * sizeof(K),
                sizeof(K));
  }
  if constexpr (!std::is_same_v<V, NullType>) {
    copy.assign(values, values + static_cast<size_t>(n) * sizeof(V));
    for (int i = 0; i < n; ++i) {
      __builtin_memcpy(
          values + static_cast<size_t>(i) * sizeof(V),
          copy.data() + static_cast<size_t>(order[static_cast<size_t>(i)].second) * sizeof(V),
          sizeof(V));
    }
  }
}

// Arrangements of a tile of BLOCK_THREADS * ITEMS items: where item i of
// thread t lies.
enum class Arrangement { kBlocked, kStriped, kWarpStriped };
template <int BLOCK_THREADS, int ITEMS>
KERNELEVAL_CPU_UNCHECKED inline long TileIndex(Arrangement a, int tid, int i) {
  switch (a) {
    case Arrangement::kBlocked:
      return static_cast<long>(tid) * ITEMS + i;
    case Arrangement::kStriped:
      return static_cast<long>(i) * BLOCK_THREADS + tid;
    case Arrangement::kWarpStriped:
    default: {
      constexpr int kWarpThreads = BLOCK_THREADS < 32 ? BLOCK_THREADS : 32;
      const int lane = tid & 31, warp = tid >> 5;
      return static_cast<long>(warp) * kWarpThreads * ITEMS + static_cast<long>(i) * kWarpThreads +
             lane;
    }
  }
}
template <int BLOCK_THREADS, int ITEMS, class T>
KERNELEVAL_CPU_UNCHECKED inline void TilePut(unsigned char* buff, Arrangement a, int tid,
                                             const T (&items)[ITEMS]) {
  for (int i = 0; i < ITEMS; ++i) Put(buff, TileIndex<BLOCK_THREADS, ITEMS>(a, tid, i), items[i]);
}
template <int BLOCK_THREADS, int ITEMS, class T, class OutputT>
KERNELEVAL_CPU_UNCHECKED inline void TileGet(const unsigned char* buff, Arrangement a, int tid,
                                             OutputT (&items)[ITEMS]) {
  for (int i = 0; i < ITEMS; ++i)
    items[i] = Get<T>(buff, TileIndex<BLOCK_THREADS, ITEMS>(a, tid, i));
}
// Scatter by rank; `valid` says which items are written (nullptr: all).
template <int BLOCK_THREADS, int ITEMS, class T, class OffsetT, class Valid>
KERNELEVAL_CPU_UNCHECKED inline void TileScatter(unsigned char* buff, const T (&items)[ITEMS],
                                                 const OffsetT (&ranks)[ITEMS], Valid valid,
                                                 const char* what) {
  constexpr long kTile = static_cast<long>(BLOCK_THREADS) * ITEMS;
  for (int i = 0; i < ITEMS; ++i) {
    if (!valid(i)) continue;
    const long rank = static_cast<long>(ranks[i]);
    if (rank < 0 || rank >= kTile) BadRank(what, rank, kTile);
    Put(buff, rank, items[i]);
  }
}

}  // namespace kerneleval_detail

// ============================================================================
// BlockReduce
template <typename T, int BLOCK_DIM_X,
          BlockReduceAlgorithm ALGORITHM = BLOCK_REDUCE_WARP_REDUCTIONS, int BLOCK_DIM_Y = 1,
          int BLOCK_DIM_Z = 1>
class BlockReduce {
  static constexpr int BLOCK_THREADS = BLOCK_DIM_X * BLOCK_DIM_Y * BLOCK_DIM_Z;
  struct _TempStorage {
    alignas(T) unsigned char slots[BLOCK_THREADS * sizeof(T)];
  };
  _TempStorage& temp_storage;
  int linear_tid;

  static _TempStorage& PrivateStorage() {
    static thread_local _TempStorage private_storage;  // __shared__
    return private_storage;
  }

  // Thread 0: the reduction of the first `valid` inputs, warp by warp; the
  // others: see the header comment.
  template <class Op>
  KERNELEVAL_CPU_UNCHECKED static T Compute(const unsigned char* s, int tid, int valid, T input,
                                            Op& op) {
    using kerneleval_detail::Get;
    if (tid >= valid) return input;
    if (tid == 0) {
      T total = input;
      for (int w = 0; w < valid; w += 32) {
        const int end = std::min(w + 32, valid);
        T warp = Get<T>(s, w);
        for (int j = w + 1; j < end; ++j) warp = op(warp, Get<T>(s, j));
        total = w == 0 ? warp : op(total, warp);
      }
      return total;
    }
    const int end = std::min((tid | 31) + 1, valid);
    T acc = Get<T>(s, tid);
    for (int j = tid + 1; j < end; ++j) acc = op(acc, Get<T>(s, j));
    return acc;
  }

  template <class Op>
  T Run(T input, Op op, int num_valid) {
    const int valid = std::min(num_valid, BLOCK_THREADS);
    if (linear_tid < valid) kerneleval_detail::Put(temp_storage.slots, linear_tid, input);
    __syncthreads();
    const T result = Compute(temp_storage.slots, linear_tid, valid, input, op);
    __syncthreads();
    return result;
  }

 public:
  struct TempStorage : Uninitialized<_TempStorage> {};

  BlockReduce() : BlockReduce(PrivateStorage(), 0) {}
  BlockReduce(TempStorage& temp_storage)  // NOLINT: as CUB's
      : BlockReduce(temp_storage.Alias(), 0) {}

  template <typename ReductionOp>
  T Reduce(T input, ReductionOp reduction_op) {
    return Run(input, reduction_op, BLOCK_THREADS);
  }
  template <int ITEMS_PER_THREAD, typename ReductionOp>
  T Reduce(T (&inputs)[ITEMS_PER_THREAD], ReductionOp reduction_op) {
    return Run(ThreadReduce(inputs, reduction_op), reduction_op, BLOCK_THREADS);
  }
  template <typename ReductionOp>
  T Reduce(T input, ReductionOp reduction_op, int num_valid) {
    return Run(input, reduction_op, num_valid);
  }
  T Sum(T input) { return Run(input, ::cuda::std::plus<>{}, BLOCK_THREADS); }
  template <int ITEMS_PER_THREAD>
  T Sum(T (&inputs)[ITEMS_PER_THREAD]) {
    return Run(ThreadReduce(inputs, ::cuda::std::plus<>{}), ::cuda::std::plus<>{}, BLOCK_THREADS);
  }
  T Sum(T input, int num_valid) { return Run(input, ::cuda::std::plus<>{}, num_valid); }

 private:
  BlockReduce(_TempStorage& storage, int) : temp_storage(storage) {
    kerneleval_detail::CheckBlockShape("cub::BlockReduce", BLOCK_DIM_X, BLOCK_DIM_Y, BLOCK_DIM_Z);
    linear_tid = RowMajorTid(BLOCK_DIM_X, BLOCK_DIM_Y, BLOCK_DIM_Z);
  }
};

// ============================================================================
// BlockScan
template <typename T, int BLOCK_DIM_X, BlockScanAlgorithm ALGORITHM = BLOCK_SCAN_RAKING,
          int BLOCK_DIM_Y = 1, int BLOCK_DIM_Z = 1>
class BlockScan {
  static constexpr int BLOCK_THREADS = BLOCK_DIM_X * BLOCK_DIM_Y * BLOCK_DIM_Z;
  // Inputs and thread 0's running reductions apart, so that one barrier
  // after the results are read suffices: the next scan writes only inputs
  // before its first barrier, after which everyone has read the last results.
  struct _TempStorage {
    alignas(T) unsigned char inputs[BLOCK_THREADS * sizeof(T)];
    alignas(T) unsigned char inclusive[BLOCK_THREADS * sizeof(T)];
    alignas(T) unsigned char prefix[sizeof(T)];
  };
  _TempStorage& temp_storage;
  int linear_tid;

  static _TempStorage& PrivateStorage() {
    static thread_local _TempStorage private_storage;  // __shared__
    return private_storage;
  }

  enum class Seed { kNone, kInitial, kCallback };

  template <class Op>
  KERNELEVAL_CPU_UNCHECKED static T FoldAll(const unsigned char* s, Op& op) {
    using kerneleval_detail::Get;
    T acc = Get<T>(s, 0);
    for (int j = 1; j < BLOCK_THREADS; ++j) acc = op(acc, Get<T>(s, j));
    return acc;
  }
  template <class Op>
  KERNELEVAL_CPU_UNCHECKED static void ScanAll(_TempStorage& st, Op& op) {
    using kerneleval_detail::Get;
    using kerneleval_detail::Put;
    T acc = Get<T>(st.inputs, 0);
    Put(st.inclusive, 0, acc);
    for (int j = 1; j < BLOCK_THREADS; ++j) {
      acc = op(acc, Get<T>(st.inputs, j));
      Put(st.inclusive, j, acc);
    }
  }
  KERNELEVAL_CPU_UNCHECKED static T GetAt(const unsigned char* s, int j) {
    return kerneleval_detail::Get<T>(s, j);
  }
  KERNELEVAL_CPU_UNCHECKED static void PutPrefix(_TempStorage& st, const T& value) {
    kerneleval_detail::Put(st.prefix, 0, value);
  }

  // The scan of the block's inputs: the caller's exclusive and inclusive
  // results, seeded with `seed` (an initial value, or the callback's prefix),
  // and the block's aggregate (of the inputs alone).
  template <class Op, class Callback>
  void Run(T input, Op& op, Seed how, T seed, Callback* callback, T* exclusive, T* inclusive,
           T* aggregate) {
    kerneleval_detail::Put(temp_storage.inputs, linear_tid, input);
    __syncthreads();
    if (linear_tid == 0) ScanAll(temp_storage, op);
    if constexpr (!std::is_same_v<Callback, void>) {
      // Every lane of the first warp calls the callback with the aggregate;
      // lane 0's answer is the block's prefix.
      if (linear_tid < 32) {
        const T total = linear_tid == 0 ? GetAt(temp_storage.inclusive, BLOCK_THREADS - 1)
                                        : FoldAll(temp_storage.inputs, op);
        const T prefix = (*callback)(total);
        if (linear_tid == 0) PutPrefix(temp_storage, prefix);
      }
    }
    __syncthreads();
    if constexpr (!std::is_same_v<Callback, void>) seed = GetAt(temp_storage.prefix, 0);
    const T incl = GetAt(temp_storage.inclusive, linear_tid);
    if (aggregate) *aggregate = GetAt(temp_storage.inclusive, BLOCK_THREADS - 1);
    if (how == Seed::kNone) {
      if (exclusive)
        *exclusive = linear_tid == 0 ? input : GetAt(temp_storage.inclusive, linear_tid - 1);
      if (inclusive) *inclusive = incl;
    } else {
      if (exclusive) {
        *exclusive =
            linear_tid == 0 ? seed : op(seed, GetAt(temp_storage.inclusive, linear_tid - 1));
      }
      if (inclusive) *inclusive = op(seed, incl);
    }
  }

  template <class Op>
  void Excl(T input, T& output, Op op, T* aggregate) {
    Run<Op, void>(input, op, Seed::kNone, input, nullptr, &output, nullptr, aggregate);
  }
  template <class Op>
  void ExclInit(T input, T& output, T init, Op op, T* aggregate) {
    Run<Op, void>(input, op, Seed::kInitial, init, nullptr, &output, nullptr, aggregate);
  }
  template <class Op, class Callback>
  void ExclCallback(T input, T& output, Op op, Callback& callback) {
    Run<Op, Callback>(input, op, Seed::kCallback, input, &callback, &output, nullptr, nullptr);
  }
  template <class Op>
  void Incl(T input, T& output, Op op, T* aggregate) {
    Run<Op, void>(input, op, Seed::kNone, input, nullptr, nullptr, &output, aggregate);
  }
  template <class Op, class Callback>
  void InclCallback(T input, T& output, Op op, Callback& callback) {
    Run<Op, Callback>(input, op, Seed::kCallback, input, &callback, nullptr, &output, nullptr);
  }

  BlockScan(_TempStorage& storage, int) : temp_storage(storage) {
    kerneleval_detail::CheckBlockShape("cub::BlockScan", BLOCK_DIM_X, BLOCK_DIM_Y, BLOCK_DIM_Z);
    linear_tid = RowMajorTid(BLOCK_DIM_X, BLOCK_DIM_Y, BLOCK_DIM_Z);
  }

 public:
  struct TempStorage : Uninitialized<_TempStorage> {};

  BlockScan() : BlockScan(PrivateStorage(), 0) {}
  BlockScan(TempStorage& temp_storage)  // NOLINT: as CUB's
      : BlockScan(temp_storage.Alias(), 0) {}

  // -- Exclusive sums
  void ExclusiveSum(T input, T& output) {
    ExclInit(input, output, T{}, ::cuda::std::plus<>{}, nullptr);
  }
  void ExclusiveSum(T input, T& output, T& block_aggregate) {
    ExclInit(input, output, T{}, ::cuda::std::plus<>{}, &block_aggregate);
  }
  template <typename BlockPrefixCallbackOp>
  void ExclusiveSum(T input, T& output, BlockPrefixCallbackOp& block_prefix_callback_op) {
    ExclCallback(input, output, ::cuda::std::plus<>{}, block_prefix_callback_op);
  }
  template <int ITEMS_PER_THREAD>
  void ExclusiveSum(T (&input)[ITEMS_PER_THREAD], T (&output)[ITEMS_PER_THREAD]) {
    ExclusiveScan(input, output, T{}, ::cuda::std::plus<>{});
  }
  template <int ITEMS_PER_THREAD>
  void ExclusiveSum(T (&input)[ITEMS_PER_THREAD], T (&output)[ITEMS_PER_THREAD],
                    T& block_aggregate) {
    ExclusiveScan(input, output, T{}, ::cuda::std::plus<>{}, block_aggregate);
  }
  template <int ITEMS_PER_THREAD, typename BlockPrefixCallbackOp>
  void ExclusiveSum(T (&input)[ITEMS_PER_THREAD], T (&output)[ITEMS_PER_THREAD],
                    BlockPrefixCallbackOp& block_prefix_callback_op) {
    ExclusiveScan(input, output, ::cuda::std::plus<>{}, block_prefix_callback_op);
  }

  // -- Exclusive scans
  template <typename ScanOp>
  void ExclusiveScan(T input, T& output, T initial_value, ScanOp scan_op) {
    ExclInit(input, output, initial_value, scan_op, nullptr);
  }
  template <typename ScanOp>
  void ExclusiveScan(T input, T& output, T initial_value, ScanOp scan_op, T& block_aggregate) {
    ExclInit(input, output, initial_value, scan_op, &block_aggregate);
  }
  template <typename ScanOp, typename BlockPrefixCallbackOp>
  void ExclusiveScan(T input, T& output, ScanOp scan_op,
                     BlockPrefixCallbackOp& block_prefix_callback_op) {
    ExclCallback(input, output, scan_op, block_prefix_callback_op);
  }
  template <int ITEMS_PER_THREAD, typename ScanOp>
  void ExclusiveScan(T (&input)[ITEMS_PER_THREAD], T (&output)[ITEMS_PER_THREAD], T initial_value,
                     ScanOp scan_op) {
    T thread_prefix = ThreadReduce(input, scan_op);
    ExclusiveScan(thread_prefix, thread_prefix, initial_value, scan_op);
    internal::ThreadScanExclusive(input, output, scan_op, thread_prefix);
  }
  template <int ITEMS_PER_THREAD, typename ScanOp>
  void ExclusiveScan(T (&input)[ITEMS_PER_THREAD], T (&output)[ITEMS_PER_THREAD], T initial_value,
                     ScanOp scan_op, T& block_aggregate) {
    T thread_prefix = ThreadReduce(input, scan_op);
    ExclusiveScan(thread_prefix, thread_prefix, initial_value, scan_op, block_aggregate);
    internal::ThreadScanExclusive(input, output, scan_op, thread_prefix);
  }
  template <int ITEMS_PER_THREAD, typename ScanOp, typename BlockPrefixCallbackOp>
  void ExclusiveScan(T (&input)[ITEMS_PER_THREAD], T (&output)[ITEMS_PER_THREAD], ScanOp scan_op,
                     BlockPrefixCallbackOp& block_prefix_callback_op) {
    T thread_prefix = ThreadReduce(input, scan_op);
    ExclusiveScan(thread_prefix, thread_prefix, scan_op, block_prefix_callback_op);
    internal::ThreadScanExclusive(input, output, scan_op, thread_prefix);
  }
  template <typename ScanOp>
  void ExclusiveScan(T input, T& output, ScanOp scan_op) {
    Excl(input, output, scan_op, nullptr);
  }
  template <typename ScanOp>
  void ExclusiveScan(T input, T& output, ScanOp scan_op, T& block_aggregate) {
    Excl(input, output, scan_op, &block_aggregate);
  }
  template <int ITEMS_PER_THREAD, typename ScanOp>
  void ExclusiveScan(T (&input)[ITEMS_PER_THREAD], T (&output)[ITEMS_PER_THREAD], ScanOp scan_op) {
    T thread_partial = ThreadReduce(input, scan_op);
    ExclusiveScan(thread_partial, thread_partial, scan_op);
    internal::ThreadScanExclusive(input, output, scan_op, thread_partial, (linear_tid != 0));
  }
  template <int ITEMS_PER_THREAD, typename ScanOp>
  void ExclusiveScan(T (&input)[ITEMS_PER_THREAD], T (&output)[ITEMS_PER_THREAD], ScanOp scan_op,
                     T& block_aggregate) {
    T thread_partial = ThreadReduce(input, scan_op);
    ExclusiveScan(thread_partial, thread_partial, scan_op, block_aggregate);
    internal::ThreadScanExclusive(input, output, scan_op, thread_partial, (linear_tid != 0));
  }

  // -- Inclusive sums
  void InclusiveSum(T input, T& output) { Incl(input, output, ::cuda::std::plus<>{}, nullptr); }
  void InclusiveSum(T input, T& output, T& block_aggregate) {
    Incl(input, output, ::cuda::std::plus<>{}, &block_aggregate);
  }
  template <typename BlockPrefixCallbackOp>
  void InclusiveSum(T input, T& output, BlockPrefixCallbackOp& block_prefix_callback_op) {
    InclCallback(input, output, ::cuda::std::plus<>{}, block_prefix_callback_op);
  }
  template <int ITEMS_PER_THREAD>
  void InclusiveSum(T (&input)[ITEMS_PER_THREAD], T (&output)[ITEMS_PER_THREAD]) {
    InclusiveScan(input, output, ::cuda::std::plus<>{});
  }
  template <int ITEMS_PER_THREAD>
  void InclusiveSum(T (&input)[ITEMS_PER_THREAD], T (&output)[ITEMS_PER_THREAD],
                    T& block_aggregate) {
    InclusiveScan(input, output, ::cuda::std::plus<>{}, block_aggregate);
  }
  template <int ITEMS_PER_THREAD, typename BlockPrefixCallbackOp>
  void InclusiveSum(T (&input)[ITEMS_PER_THREAD], T (&output)[ITEMS_PER_THREAD],
                    BlockPrefixCallbackOp& block_prefix_callback_op) {
    InclusiveScan(input, output, ::cuda::std::plus<>{}, block_prefix_callback_op);
  }

  // -- Inclusive scans
  template <typename ScanOp>
  void InclusiveScan(T input, T& output, ScanOp scan_op) {
    Incl(input, output, scan_op, nullptr);
  }
  template <typename ScanOp>
  void InclusiveScan(T input, T& output, ScanOp scan_op, T& block_aggregate) {
    Incl(input, output, scan_op, &block_aggregate);
  }
  template <typename ScanOp, typename BlockPrefixCallbackOp>
  void InclusiveScan(T input, T& output, ScanOp scan_op,
                     BlockPrefixCallbackOp& block_prefix_callback_op) {
    InclCallback(input, output, scan_op, block_prefix_callback_op);
  }
  template <int ITEMS_PER_THREAD, typename ScanOp>
  void InclusiveScan(T (&input)[ITEMS_PER_THREAD], T (&output)[ITEMS_PER_THREAD], ScanOp scan_op) {
    if (ITEMS_PER_THREAD == 1) {
      InclusiveScan(input[0], output[0], scan_op);
    } else {
      T thread_prefix = ThreadReduce(input, scan_op);
      ExclusiveScan(thread_prefix, thread_prefix, scan_op);
      internal::ThreadScanInclusive(input, output, scan_op, thread_prefix, (linear_tid != 0));
    }
  }
  template <int ITEMS_PER_THREAD, typename ScanOp>
  void InclusiveScan(T (&input)[ITEMS_PER_THREAD], T (&output)[ITEMS_PER_THREAD], T initial_value,
                     ScanOp scan_op) {
    T thread_prefix = ThreadReduce(input, scan_op);
    ExclusiveScan(thread_prefix, thread_prefix, initial_value, scan_op);
    internal::ThreadScanInclusive(input, output, scan_op, thread_prefix);
  }
  template <int ITEMS_PER_THREAD, typename ScanOp>
  void InclusiveScan(T (&input)[ITEMS_PER_THREAD], T (&output)[ITEMS_PER_THREAD], ScanOp scan_op,
                     T& block_aggregate) {
    if (ITEMS_PER_THREAD == 1) {
      InclusiveScan(input[0], output[0], scan_op, block_aggregate);
    } else {
      T thread_prefix = ThreadReduce(input, scan_op);
      ExclusiveScan(thread_prefix, thread_prefix, scan_op, block_aggregate);
      internal::ThreadScanInclusive(input, output, scan_op, thread_prefix, (linear_tid != 0));
    }
  }
  template <int ITEMS_PER_THREAD, typename ScanOp>
  void InclusiveScan(T (&input)[ITEMS_PER_THREAD], T (&output)[ITEMS_PER_THREAD], T initial_value,
                     ScanOp scan_op, T& block_aggregate) {
    T thread_prefix = ThreadReduce(input, scan_op);
    ExclusiveScan(thread_prefix, thread_prefix, initial_value, scan_op, block_aggregate);
    internal::ThreadScanInclusive(input, output, scan_op, thread_prefix);
  }
  template <int ITEMS_PER_THREAD, typename ScanOp, typename BlockPrefixCallbackOp>
  void InclusiveScan(T (&input)[ITEMS_PER_THREAD], T (&output)[ITEMS_PER_THREAD], ScanOp scan_op,
                     BlockPrefixCallbackOp& block_prefix_callback_op) {
    if (ITEMS_PER_THREAD == 1) {
      InclusiveScan(input[0], output[0], scan_op, block_prefix_callback_op);
    } else {
      T thread_prefix = ThreadReduce(input, scan_op);
      ExclusiveScan(thread_prefix, thread_prefix, scan_op, block_prefix_callback_op);
      internal::ThreadScanInclusive(input, output, scan_op, thread_prefix);
    }
  }
};

// ============================================================================
// WarpReduce
template <typename T, int LOGICAL_WARP_THREADS = 32>
class WarpReduce {
  static_assert(kerneleval_detail::kIsLogicalWarp<LOGICAL_WARP_THREADS>,
                "kerneleval's CPU backend supports cub::WarpReduce with LOGICAL_WARP_THREADS a "
                "power of two <= 32 (1, 2, 4, 8, 16, 32)");
  static constexpr int L = LOGICAL_WARP_THREADS;
  using Warp = kerneleval_detail::LogicalWarp;

  // Lane i: op over lanes i..last (see the header comment).
  template <class Op>
  KERNELEVAL_CPU_UNCHECKED static T Suffix(const Warp& w, int last, T input, Op& op) {
    if (w.lane > last) return input;
    return kerneleval_detail::WarpFold<T>(w, w.lane, last, op);
  }

  template <class Op>
  T Run(T input, Op op, int valid_items) {
    const Warp w = kerneleval_detail::GetLogicalWarp(L);
    kerneleval_detail::WarpPut(w, input);
    kerneleval_detail::MeetWarp(w, L);
    const T result = Suffix(w, std::min(valid_items, w.count) - 1, input, op);
    kerneleval_detail::MeetWarp(w, L);
    return result;
  }
  template <class Op, class FlagT>
  T Segmented(T input, FlagT flag, Op op, bool head) {
    const Warp w = kerneleval_detail::GetLogicalWarp(L);
    kerneleval_detail::WarpPut(w, input);
    kerneleval_detail::WarpPutFlag(w, static_cast<bool>(flag));
    kerneleval_detail::MeetWarp(w, L);
    const T result = Suffix(w, kerneleval_detail::SegmentEnd(w, head), input, op);
    kerneleval_detail::MeetWarp(w, L);
    return result;
  }

 public:
  struct TempStorage : Uninitialized<NullType> {};

  WarpReduce(TempStorage& /*temp_storage*/) {}  // NOLINT: as CUB's

  T Sum(T input) { return Run(input, ::cuda::std::plus<>{}, L); }
  T Sum(T input, int valid_items) { return Run(input, ::cuda::std::plus<>{}, valid_items); }
  template <typename FlagT>
  T HeadSegmentedSum(T input, FlagT head_flag) {
    return Segmented(input, head_flag, ::cuda::std::plus<>{}, true);
  }
  template <typename FlagT>
  T TailSegmentedSum(T input, FlagT tail_flag) {
    return Segmented(input, tail_flag, ::cuda::std::plus<>{}, false);
  }
  template <typename ReductionOp>
  T Reduce(T input, ReductionOp reduction_op) {
    return Run(input, reduction_op, L);
  }
  template <typename ReductionOp>
  T Reduce(T input, ReductionOp reduction_op, int valid_items) {
    return Run(input, reduction_op, valid_items);
  }
  template <typename ReductionOp, typename FlagT>
  T HeadSegmentedReduce(T input, FlagT head_flag, ReductionOp reduction_op) {
    return Segmented(input, head_flag, reduction_op, true);
  }
  template <typename ReductionOp, typename FlagT>
  T TailSegmentedReduce(T input, FlagT tail_flag, ReductionOp reduction_op) {
    return Segmented(input, tail_flag, reduction_op, false);
  }
};

// ============================================================================
// WarpScan
template <typename T, int LOGICAL_WARP_THREADS = 32>
class WarpScan {
  static_assert(kerneleval_detail::kIsLogicalWarp<LOGICAL_WARP_THREADS>,
                "kerneleval's CPU backend supports cub::WarpScan with LOGICAL_WARP_THREADS a "
                "power of two <= 32 (1, 2, 4, 8, 16, 32)");
  static constexpr int L = LOGICAL_WARP_THREADS;
  using Warp = kerneleval_detail::LogicalWarp;

  struct Results {
    T inclusive, exclusive, aggregate;
  };

  // has_init: inclusive = init op (x_0 ... x_i), exclusive = init op (x_0 ...
  // x_{i-1}) (init for lane 0); without: lane 0's exclusive is CUB's
  // shuffle-up of its own inclusive (its input), or 0 for integer sums.
  template <class Op>
  KERNELEVAL_CPU_UNCHECKED static Results Compute(const Warp& w, T input, Op& op, bool has_init,
                                                  const T& init) {
    const T incl = kerneleval_detail::WarpFold<T>(w, 0, w.lane, op);
    const T agg = kerneleval_detail::WarpFold<T>(w, 0, w.count - 1, op);
    T excl;
    if (w.lane == 0) {
      if (has_init) {
        excl = init;
      } else if constexpr (std::is_integral_v<T> && std::is_same_v<Op, ::cuda::std::plus<>>) {
        excl = T{};
      } else {
        excl = input;
      }
    } else {
      excl = kerneleval_detail::WarpFold<T>(w, 0, w.lane - 1, op);
      if (has_init) excl = op(init, excl);
    }
    return {has_init ? op(init, incl) : incl, excl, agg};
  }

  template <class Op>
  Results Run(T input, Op& op, bool has_init, const T& init) {
    const Warp w = kerneleval_detail::GetLogicalWarp(L);
    kerneleval_detail::WarpPut(w, input);
    kerneleval_detail::MeetWarp(w, L);
    const Results r = Compute(w, input, op, has_init, init);
    kerneleval_detail::MeetWarp(w, L);
    return r;
  }

 public:
  struct TempStorage : Uninitialized<NullType> {};

  WarpScan(TempStorage& /*temp_storage*/) {}  // NOLINT: as CUB's

  void InclusiveSum(T input, T& inclusive_output) {
    InclusiveScan(input, inclusive_output, ::cuda::std::plus<>{});
  }
  void InclusiveSum(T input, T& inclusive_output, T& warp_aggregate) {
    InclusiveScan(input, inclusive_output, ::cuda::std::plus<>{}, warp_aggregate);
  }
  void ExclusiveSum(T input, T& exclusive_output) {
    ExclusiveScan(input, exclusive_output, T{}, ::cuda::std::plus<>{});
  }
  void ExclusiveSum(T input, T& exclusive_output, T& warp_aggregate) {
    ExclusiveScan(input, exclusive_output, T{}, ::cuda::std::plus<>{}, warp_aggregate);
  }
  template <typename ScanOp>
  void InclusiveScan(T input, T& inclusive_output, ScanOp scan_op) {
    inclusive_output = Run(input, scan_op, false, input).inclusive;
  }
  template <typename ScanOp>
  void InclusiveScan(T input, T& inclusive_output, T initial_value, ScanOp scan_op) {
    inclusive_output = Run(input, scan_op, true, initial_value).inclusive;
  }
  template <typename ScanOp>
  void InclusiveScan(T input, T& inclusive_output, ScanOp scan_op, T& warp_aggregate) {
    const Results r = Run(input, scan_op, false, input);
    inclusive_output = r.inclusive;
    warp_aggregate = r.aggregate;
  }
  template <typename ScanOp>
  void InclusiveScan(T input, T& inclusive_output, T initial_value, ScanOp scan_op,
                     T& warp_aggregate) {
    const Results r = Run(input, scan_op, true, initial_value);
    inclusive_output = r.inclusive;
    warp_aggregate = r.aggregate;
  }
  template <typename ScanOp>
  void ExclusiveScan(T input, T& exclusive_output, ScanOp scan_op) {
    exclusive_output = Run(input, scan_op, false, input).exclusive;
  }
  template <typename ScanOp>
  void ExclusiveScan(T input, T& exclusive_output, T initial_value, ScanOp scan_op) {
    exclusive_output = Run(input, scan_op, true, initial_value).exclusive;
  }
  template <typename ScanOp>
  void ExclusiveScan(T input, T& exclusive_output, ScanOp scan_op, T& warp_aggregate) {
    const Results r = Run(input, scan_op, false, input);
    exclusive_output = r.exclusive;
    warp_aggregate = r.aggregate;
  }
  template <typename ScanOp>
  void ExclusiveScan(T input, T& exclusive_output, T initial_value, ScanOp scan_op,
                     T& warp_aggregate) {
    const Results r = Run(input, scan_op, true, initial_value);
    exclusive_output = r.exclusive;
    warp_aggregate = r.aggregate;
  }
  template <typename ScanOp>
  void Scan(T input, T& inclusive_output, T& exclusive_output, ScanOp scan_op) {
    const Results r = Run(input, scan_op, false, input);
    inclusive_output = r.inclusive;
    exclusive_output = r.exclusive;
  }
  template <typename ScanOp>
  void Scan(T input, T& inclusive_output, T& exclusive_output, T initial_value, ScanOp scan_op) {
    const Results r = Run(input, scan_op, true, initial_value);
    inclusive_output = r.inclusive;
    exclusive_output = r.exclusive;
  }
  T Broadcast(T input, unsigned int src_lane) {
    const Warp w = kerneleval_detail::GetLogicalWarp(L);
    kerneleval_detail::WarpPut(w, input);
    kerneleval_detail::MeetWarp(w, L);
    const int lane = static_cast<int>(src_lane);
    const T result = lane < w.count ? kerneleval_detail::WarpGet<T>(w, lane) : input;
    kerneleval_detail::MeetWarp(w, L);
    return result;
  }
};

// ============================================================================
// Direct loads and stores: the kernel's own memory accesses (instrumented as
// its code is).
template <typename T, int ITEMS_PER_THREAD, typename RandomAccessIterator>
inline void LoadDirectBlocked(int linear_tid, RandomAccessIterator block_src_it,
                              T (&dst_items)[ITEMS_PER_THREAD]) {
  for (int i = 0; i < ITEMS_PER_THREAD; i++)
    dst_items[i] = block_src_it[linear_tid * ITEMS_PER_THREAD + i];
}
template <typename T, int ITEMS_PER_THREAD, typename RandomAccessIterator>
inline void LoadDirectBlocked(int linear_tid, RandomAccessIterator block_src_it,
                              T (&dst_items)[ITEMS_PER_THREAD], int block_items_end) {
  for (int i = 0; i < ITEMS_PER_THREAD; i++) {
    const auto src_pos = linear_tid * ITEMS_PER_THREAD + i;
    if (src_pos < block_items_end) dst_items[i] = block_src_it[src_pos];
  }
}
template <typename T, typename DefaultT, int ITEMS_PER_THREAD, typename RandomAccessIterator>
inline void LoadDirectBlocked(int linear_tid, RandomAccessIterator block_src_it,
                              T (&dst_items)[ITEMS_PER_THREAD], int block_items_end,
                              DefaultT oob_default) {
  for (int i = 0; i < ITEMS_PER_THREAD; i++) dst_items[i] = oob_default;
  LoadDirectBlocked(linear_tid, block_src_it, dst_items, block_items_end);
}
// CUB loads vectors when the tile's pointer is aligned for them and falls
// back to LoadDirectBlocked otherwise: the same items either way.
template <typename T, int ITEMS_PER_THREAD>
inline void LoadDirectBlockedVectorized(int linear_tid, T* block_src_ptr,
                                        T (&dst_items)[ITEMS_PER_THREAD]) {
  LoadDirectBlocked(linear_tid, block_src_ptr, dst_items);
}
template <int BLOCK_THREADS, typename T, int ITEMS_PER_THREAD, typename RandomAccessIterator>
inline void LoadDirectStriped(int linear_tid, RandomAccessIterator block_src_it,
                              T (&dst_items)[ITEMS_PER_THREAD]) {
  for (int i = 0; i < ITEMS_PER_THREAD; i++)
    dst_items[i] = block_src_it[linear_tid + i * BLOCK_THREADS];
}
template <int BLOCK_THREADS, typename T, int ITEMS_PER_THREAD, typename RandomAccessIterator>
inline void LoadDirectStriped(int linear_tid, RandomAccessIterator block_src_it,
                              T (&dst_items)[ITEMS_PER_THREAD], int block_items_end) {
  for (int i = 0; i < ITEMS_PER_THREAD; i++) {
    const auto src_pos = linear_tid + i * BLOCK_THREADS;
    if (src_pos < block_items_end) dst_items[i] = block_src_it[src_pos];
  }
}
template <int BLOCK_THREADS, typename T, typename DefaultT, int ITEMS_PER_THREAD,
          typename RandomAccessIterator>
inline void LoadDirectStriped(int linear_tid, RandomAccessIterator block_src_it,
                              T (&dst_items)[ITEMS_PER_THREAD], int block_items_end,
                              DefaultT oob_default) {
  for (int i = 0; i < ITEMS_PER_THREAD; i++) dst_items[i] = oob_default;
  LoadDirectStriped<BLOCK_THREADS>(linear_tid, block_src_it, dst_items, block_items_end);
}
template <typename T, int ITEMS_PER_THREAD, typename RandomAccessIterator>
inline void LoadDirectWarpStriped(int linear_tid, RandomAccessIterator block_src_it,
                                  T (&dst_items)[ITEMS_PER_THREAD]) {
  const int tid = linear_tid & 31;
  const int warp_offset = (linear_tid >> 5) * 32 * ITEMS_PER_THREAD;
  for (int i = 0; i < ITEMS_PER_THREAD; i++)
    dst_items[i] = block_src_it[warp_offset + tid + i * 32];
}
template <typename T, int ITEMS_PER_THREAD, typename RandomAccessIterator>
inline void LoadDirectWarpStriped(int linear_tid, RandomAccessIterator block_src_it,
                                  T (&dst_items)[ITEMS_PER_THREAD], int block_items_end) {
  const int tid = linear_tid & 31;
  const int warp_offset = (linear_tid >> 5) * 32 * ITEMS_PER_THREAD;
  for (int i = 0; i < ITEMS_PER_THREAD; i++) {
    const auto src_pos = warp_offset + tid + i * 32;
    if (src_pos < block_items_end) dst_items[i] = block_src_it[src_pos];
  }
}
template <typename T, typename DefaultT, int ITEMS_PER_THREAD, typename RandomAccessIterator>
inline void LoadDirectWarpStriped(int linear_tid, RandomAccessIterator block_src_it,
                                  T (&dst_items)[ITEMS_PER_THREAD], int block_items_end,
                                  DefaultT oob_default) {
  for (int i = 0; i < ITEMS_PER_THREAD; i++) dst_items[i] = oob_default;
  LoadDirectWarpStriped(linear_tid, block_src_it, dst_items, block_items_end);
}

template <typename T, int ITEMS_PER_THREAD, typename OutputIteratorT>
inline void StoreDirectBlocked(int linear_tid, OutputIteratorT block_itr,
                               T (&items)[ITEMS_PER_THREAD]) {
  OutputIteratorT thread_itr = block_itr + (linear_tid * ITEMS_PER_THREAD);
  for (int i = 0; i < ITEMS_PER_THREAD; i++) thread_itr[i] = items[i];
}
template <typename T, int ITEMS_PER_THREAD, typename OutputIteratorT>
inline void StoreDirectBlocked(int linear_tid, OutputIteratorT block_itr,
                               T (&items)[ITEMS_PER_THREAD], int valid_items) {
  OutputIteratorT thread_itr = block_itr + (linear_tid * ITEMS_PER_THREAD);
  for (int i = 0; i < ITEMS_PER_THREAD; i++) {
    if (i + (linear_tid * ITEMS_PER_THREAD) < valid_items) thread_itr[i] = items[i];
  }
}
// CUB stores vectors unconditionally: a tile pointer not aligned for them is
// a misaligned address on a GPU.
template <typename T, int ITEMS_PER_THREAD>
inline void StoreDirectBlockedVectorized(int linear_tid, T* block_ptr,
                                         T (&items)[ITEMS_PER_THREAD]) {
  constexpr int kMaxVec = ITEMS_PER_THREAD < 4 ? ITEMS_PER_THREAD : 4;
  constexpr int kVec =
      ((((kMaxVec - 1) & kMaxVec) == 0) && ((ITEMS_PER_THREAD % kMaxVec) == 0)) ? kMaxVec : 1;
  constexpr size_t kBytes = sizeof(T) * kVec;
  constexpr size_t kAlign =
      (kVec > 1 && (kBytes & (kBytes - 1)) == 0 && kBytes <= 16) ? kBytes : alignof(T);
  if (reinterpret_cast<uintptr_t>(block_ptr) % kAlign != 0) {
    kerneleval_cpu::detail::Trap(
        "cub::StoreDirectBlockedVectorized: misaligned address (the tile's pointer is not "
        "aligned for the vector stores CUB makes)");
  }
  StoreDirectBlocked(linear_tid, block_ptr, items);
}
template <int BLOCK_THREADS, typename T, int ITEMS_PER_THREAD, typename OutputIteratorT>
inline void StoreDirectStriped(int linear_tid, OutputIteratorT block_itr,
                               T (&items)[ITEMS_PER_THREAD]) {
  OutputIteratorT thread_itr = block_itr + linear_tid;
  for (int i = 0; i < ITEMS_PER_THREAD; i++) thread_itr[(i * BLOCK_THREADS)] = items[i];
}
template <int BLOCK_THREADS, typename T, int ITEMS_PER_THREAD, typename OutputIteratorT>
inline void StoreDirectStriped(int linear_tid, OutputIteratorT block_itr,
                               T (&items)[ITEMS_PER_THREAD], int valid_items) {
  OutputIteratorT thread_itr = block_itr + linear_tid;
  for (int i = 0; i < ITEMS_PER_THREAD; i++) {
    if ((i * BLOCK_THREADS) + linear_tid < valid_items) thread_itr[(i * BLOCK_THREADS)] = items[i];
  }
}
template <typename T, int ITEMS_PER_THREAD, typename OutputIteratorT>
inline void StoreDirectWarpStriped(int linear_tid, OutputIteratorT block_itr,
                                   T (&items)[ITEMS_PER_THREAD]) {
  const int tid = linear_tid & 31;
  const int warp_offset = (linear_tid >> 5) * 32 * ITEMS_PER_THREAD;
  OutputIteratorT thread_itr = block_itr + warp_offset + tid;
  for (int i = 0; i < ITEMS_PER_THREAD; i++) thread_itr[(i * 32)] = items[i];
}
template <typename T, int ITEMS_PER_THREAD, typename OutputIteratorT>
inline void StoreDirectWarpStriped(int linear_tid, OutputIteratorT block_itr,
                                   T (&items)[ITEMS_PER_THREAD], int valid_items) {
  const int tid = linear_tid & 31;
  const int warp_offset = (linear_tid >> 5) * 32 * ITEMS_PER_THREAD;
  OutputIteratorT thread_itr = block_itr + warp_offset + tid;
  for (int i = 0; i < ITEMS_PER_THREAD; i++) {
    if (warp_offset + tid + (i * 32) < valid_items) thread_itr[(i * 32)] = items[i];
  }
}

// ============================================================================
// BlockExchange
template <typename T, int BLOCK_DIM_X, int ITEMS_PER_THREAD, bool WARP_TIME_SLICING = false,
          int BLOCK_DIM_Y = 1, int BLOCK_DIM_Z = 1>
class BlockExchange {
  static constexpr int BLOCK_THREADS = BLOCK_DIM_X * BLOCK_DIM_Y * BLOCK_DIM_Z;
  using Arrangement = kerneleval_detail::Arrangement;

 public:
  struct alignas(16) _TempStorage {
    alignas(T) unsigned char buff[BLOCK_THREADS * ITEMS_PER_THREAD * sizeof(T)];
    int valid_items;  // BlockStore's guarded transposed stores: thread 0's
  };
  using TempStorage = Uninitialized<_TempStorage>;

 private:
  _TempStorage& temp_storage;
  int linear_tid;

  static _TempStorage& PrivateStorage() {
    static thread_local _TempStorage private_storage;  // __shared__
    return private_storage;
  }

  // Every thread writes its items in arrangement `from`, then reads them in
  // `to`; the warp-striped exchanges meet their warp only, as CUB's do.
  template <class OutputT>
  void Exchange(const T (&input)[ITEMS_PER_THREAD], OutputT (&output)[ITEMS_PER_THREAD],
                Arrangement from, Arrangement to, bool warp_only) {
    kerneleval_detail::TilePut<BLOCK_THREADS, ITEMS_PER_THREAD>(temp_storage.buff, from, linear_tid,
                                                                input);
    Meet(warp_only);
    kerneleval_detail::TileGet<BLOCK_THREADS, ITEMS_PER_THREAD, T>(temp_storage.buff, to,
                                                                   linear_tid, output);
    Meet(warp_only);
  }
  void Meet(bool warp_only) {
    if (warp_only) {
      const kerneleval_detail::LogicalWarp w = kerneleval_detail::GetLogicalWarp(32);
      __syncwarp(w.mask);
    } else {
      __syncthreads();
    }
  }
  template <class OutputT, class OffsetT, class Valid>
  void Scatter(const T (&input)[ITEMS_PER_THREAD], OutputT (&output)[ITEMS_PER_THREAD],
               OffsetT (&ranks)[ITEMS_PER_THREAD], Valid valid, Arrangement to, const char* what) {
    kerneleval_detail::TileScatter<BLOCK_THREADS, ITEMS_PER_THREAD>(temp_storage.buff, input, ranks,
                                                                    valid, what);
    __syncthreads();
    kerneleval_detail::TileGet<BLOCK_THREADS, ITEMS_PER_THREAD, T>(temp_storage.buff, to,
                                                                   linear_tid, output);
    __syncthreads();
  }

  template <class, int, int, BlockLoadAlgorithm, int, int>
  friend class BlockLoad;
  template <class, int, int, BlockStoreAlgorithm, int, int>
  friend class BlockStore;
  template <class, int, int, class, int, bool, BlockScanAlgorithm, cudaSharedMemConfig, int, int>
  friend class BlockRadixSort;

  // BlockStore's guarded transposed store: the exchange, and thread 0's
  // valid_items for every thread (CUB broadcasts it through shared memory).
  int ExchangeAndBroadcast(T (&items)[ITEMS_PER_THREAD], Arrangement from, Arrangement to,
                           bool warp_only, int valid_items) {
    kerneleval_detail::TilePut<BLOCK_THREADS, ITEMS_PER_THREAD>(temp_storage.buff, from, linear_tid,
                                                                items);
    if (linear_tid == 0) PutValid(valid_items);
    __syncthreads();
    (void)warp_only;
    kerneleval_detail::TileGet<BLOCK_THREADS, ITEMS_PER_THREAD, T>(temp_storage.buff, to,
                                                                   linear_tid, items);
    const int broadcast = GetValid();
    __syncthreads();
    return broadcast;
  }
  KERNELEVAL_CPU_UNCHECKED void PutValid(int v) { temp_storage.valid_items = v; }
  KERNELEVAL_CPU_UNCHECKED int GetValid() const { return temp_storage.valid_items; }

  BlockExchange(_TempStorage& storage, int) : temp_storage(storage) {
    kerneleval_detail::CheckBlockShape("cub::BlockExchange", BLOCK_DIM_X, BLOCK_DIM_Y, BLOCK_DIM_Z);
    linear_tid = RowMajorTid(BLOCK_DIM_X, BLOCK_DIM_Y, BLOCK_DIM_Z);
  }
  BlockExchange(_TempStorage& storage, const char* collective) : temp_storage(storage) {
    kerneleval_detail::CheckBlockShape(collective, BLOCK_DIM_X, BLOCK_DIM_Y, BLOCK_DIM_Z);
    linear_tid = RowMajorTid(BLOCK_DIM_X, BLOCK_DIM_Y, BLOCK_DIM_Z);
  }

 public:
  BlockExchange() : BlockExchange(PrivateStorage(), 0) {}
  BlockExchange(TempStorage& temp_storage)  // NOLINT: as CUB's
      : BlockExchange(temp_storage.Alias(), 0) {}

  template <typename OutputT>
  void StripedToBlocked(const T (&input_items)[ITEMS_PER_THREAD],
                        OutputT (&output_items)[ITEMS_PER_THREAD]) {
    Exchange(input_items, output_items, Arrangement::kStriped, Arrangement::kBlocked, false);
  }
  template <typename OutputT>
  void BlockedToStriped(const T (&input_items)[ITEMS_PER_THREAD],
                        OutputT (&output_items)[ITEMS_PER_THREAD]) {
    Exchange(input_items, output_items, Arrangement::kBlocked, Arrangement::kStriped, false);
  }
  template <typename OutputT>
  void WarpStripedToBlocked(const T (&input_items)[ITEMS_PER_THREAD],
                            OutputT (&output_items)[ITEMS_PER_THREAD]) {
    Exchange(input_items, output_items, Arrangement::kWarpStriped, Arrangement::kBlocked, true);
  }
  template <typename OutputT>
  void BlockedToWarpStriped(const T (&input_items)[ITEMS_PER_THREAD],
                            OutputT (&output_items)[ITEMS_PER_THREAD]) {
    Exchange(input_items, output_items, Arrangement::kBlocked, Arrangement::kWarpStriped, true);
  }
  template <typename OutputT, typename OffsetT>
  void ScatterToBlocked(const T (&input_items)[ITEMS_PER_THREAD],
                        OutputT (&output_items)[ITEMS_PER_THREAD],
                        OffsetT (&ranks)[ITEMS_PER_THREAD]) {
    Scatter(
        input_items, output_items, ranks, [](int) { return true; }, Arrangement::kBlocked,
        "ScatterToBlocked");
  }
  template <typename OutputT, typename OffsetT>
  void ScatterToStriped(const T (&input_items)[ITEMS_PER_THREAD],
                        OutputT (&output_items)[ITEMS_PER_THREAD],
                        OffsetT (&ranks)[ITEMS_PER_THREAD]) {
    Scatter(
        input_items, output_items, ranks, [](int) { return true; }, Arrangement::kStriped,
        "ScatterToStriped");
  }
  template <typename OutputT, typename OffsetT>
  void ScatterToStripedGuarded(const T (&input_items)[ITEMS_PER_THREAD],
                               OutputT (&output_items)[ITEMS_PER_THREAD],
                               OffsetT (&ranks)[ITEMS_PER_THREAD]) {
    Scatter(
        input_items, output_items, ranks, [&](int i) { return ranks[i] >= 0; },
        Arrangement::kStriped, "ScatterToStripedGuarded");
  }
  template <typename OutputT, typename OffsetT, typename ValidFlag>
  void ScatterToStripedFlagged(const T (&input_items)[ITEMS_PER_THREAD],
                               OutputT (&output_items)[ITEMS_PER_THREAD],
                               OffsetT (&ranks)[ITEMS_PER_THREAD],
                               ValidFlag (&is_valid)[ITEMS_PER_THREAD]) {
    Scatter(
        input_items, output_items, ranks, [&](int i) { return static_cast<bool>(is_valid[i]); },
        Arrangement::kStriped, "ScatterToStripedFlagged");
  }
  void StripedToBlocked(T (&items)[ITEMS_PER_THREAD]) { StripedToBlocked(items, items); }
  void BlockedToStriped(T (&items)[ITEMS_PER_THREAD]) { BlockedToStriped(items, items); }
  void WarpStripedToBlocked(T (&items)[ITEMS_PER_THREAD]) { WarpStripedToBlocked(items, items); }
  void BlockedToWarpStriped(T (&items)[ITEMS_PER_THREAD]) { BlockedToWarpStriped(items, items); }
  template <typename OffsetT>
  void ScatterToBlocked(T (&items)[ITEMS_PER_THREAD], OffsetT (&ranks)[ITEMS_PER_THREAD]) {
    ScatterToBlocked(items, items, ranks);
  }
  template <typename OffsetT>
  void ScatterToStriped(T (&items)[ITEMS_PER_THREAD], OffsetT (&ranks)[ITEMS_PER_THREAD]) {
    ScatterToStriped(items, items, ranks);
  }
  template <typename OffsetT>
  void ScatterToStripedGuarded(T (&items)[ITEMS_PER_THREAD], OffsetT (&ranks)[ITEMS_PER_THREAD]) {
    ScatterToStripedGuarded(items, items, ranks);
  }
  template <typename OffsetT, typename ValidFlag>
  void ScatterToStripedFlagged(T (&items)[ITEMS_PER_THREAD], OffsetT (&ranks)[ITEMS_PER_THREAD],
                               ValidFlag (&is_valid)[ITEMS_PER_THREAD]) {
    ScatterToStripedFlagged(items, items, ranks, is_valid);
  }
};

// ============================================================================
// BlockLoad
template <typename T, int BLOCK_DIM_X, int ITEMS_PER_THREAD,
          BlockLoadAlgorithm ALGORITHM = BLOCK_LOAD_DIRECT, int BLOCK_DIM_Y = 1,
          int BLOCK_DIM_Z = 1>
class BlockLoad {
  static constexpr int BLOCK_THREADS = BLOCK_DIM_X * BLOCK_DIM_Y * BLOCK_DIM_Z;
  static constexpr bool kTranspose = ALGORITHM == BLOCK_LOAD_TRANSPOSE;
  static constexpr bool kWarpTranspose =
      ALGORITHM == BLOCK_LOAD_WARP_TRANSPOSE || ALGORITHM == BLOCK_LOAD_WARP_TRANSPOSE_TIMESLICED;
  static_assert(!kWarpTranspose || BLOCK_THREADS % 32 == 0,
                "BLOCK_THREADS must be a multiple of WARP_THREADS");
  using Exchange = BlockExchange<T, BLOCK_DIM_X, ITEMS_PER_THREAD, false, BLOCK_DIM_Y, BLOCK_DIM_Z>;
  using _TempStorage =
      std::conditional_t<kTranspose || kWarpTranspose, typename Exchange::_TempStorage, NullType>;

  _TempStorage& temp_storage;
  int linear_tid;

  static _TempStorage& PrivateStorage() {
    static thread_local _TempStorage private_storage;  // __shared__
    return private_storage;
  }

  // The direct load of the algorithm, then its exchange to blocked.
  template <class Direct>
  void Run(T (&dst_items)[ITEMS_PER_THREAD], Direct direct) {
    direct();
    if constexpr (kTranspose || kWarpTranspose) {
      Exchange exchange(temp_storage, "cub::BlockLoad");
      if constexpr (kTranspose) {
        exchange.StripedToBlocked(dst_items, dst_items);
      } else {
        exchange.WarpStripedToBlocked(dst_items, dst_items);
      }
    }
  }

  // The three Load forms: `guard` is nothing, (block_items_end) or
  // (block_items_end, oob_default), passed on to the direct load.
  template <typename RandomAccessIterator, typename... Guard>
  void LoadGuarded(RandomAccessIterator block_src_it, T (&dst_items)[ITEMS_PER_THREAD],
                   Guard... guard) {
    Run(dst_items, [&] {
      if constexpr (ALGORITHM == BLOCK_LOAD_STRIPED || kTranspose) {
        LoadDirectStriped<BLOCK_THREADS>(linear_tid, block_src_it, dst_items, guard...);
      } else if constexpr (kWarpTranspose) {
        LoadDirectWarpStriped(linear_tid, block_src_it, dst_items, guard...);
      } else {
        LoadDirectBlocked(linear_tid, block_src_it, dst_items, guard...);
      }
    });
  }

  BlockLoad(_TempStorage& storage, int) : temp_storage(storage) {
    linear_tid = RowMajorTid(BLOCK_DIM_X, BLOCK_DIM_Y, BLOCK_DIM_Z);
  }

 public:
  using TempStorage = Uninitialized<_TempStorage>;

  BlockLoad() : BlockLoad(PrivateStorage(), 0) {}
  BlockLoad(TempStorage& temp_storage)  // NOLINT: as CUB's
      : BlockLoad(temp_storage.Alias(), 0) {}

  template <typename RandomAccessIterator>
  void Load(RandomAccessIterator block_src_it, T (&dst_items)[ITEMS_PER_THREAD]) {
    LoadGuarded(block_src_it, dst_items);
  }
  template <typename RandomAccessIterator>
  void Load(RandomAccessIterator block_src_it, T (&dst_items)[ITEMS_PER_THREAD],
            int block_items_end) {
    LoadGuarded(block_src_it, dst_items, block_items_end);
  }
  template <typename RandomAccessIterator, typename DefaultT>
  void Load(RandomAccessIterator block_src_it, T (&dst_items)[ITEMS_PER_THREAD],
            int block_items_end, DefaultT oob_default) {
    LoadGuarded(block_src_it, dst_items, block_items_end, oob_default);
  }
};

// ============================================================================
// BlockStore
template <typename T, int BLOCK_DIM_X, int ITEMS_PER_THREAD,
          BlockStoreAlgorithm ALGORITHM = BLOCK_STORE_DIRECT, int BLOCK_DIM_Y = 1,
          int BLOCK_DIM_Z = 1>
class BlockStore {
  static constexpr int BLOCK_THREADS = BLOCK_DIM_X * BLOCK_DIM_Y * BLOCK_DIM_Z;
  static constexpr bool kTranspose = ALGORITHM == BLOCK_STORE_TRANSPOSE;
  static constexpr bool kWarpTranspose =
      ALGORITHM == BLOCK_STORE_WARP_TRANSPOSE || ALGORITHM == BLOCK_STORE_WARP_TRANSPOSE_TIMESLICED;
  static_assert(!kWarpTranspose || BLOCK_THREADS % 32 == 0,
                "BLOCK_THREADS must be a multiple of WARP_THREADS");
  using Exchange = BlockExchange<T, BLOCK_DIM_X, ITEMS_PER_THREAD, false, BLOCK_DIM_Y, BLOCK_DIM_Z>;
  using Arrangement = kerneleval_detail::Arrangement;
  using _TempStorage =
      std::conditional_t<kTranspose || kWarpTranspose, typename Exchange::_TempStorage, NullType>;

  _TempStorage& temp_storage;
  int linear_tid;

  static _TempStorage& PrivateStorage() {
    static thread_local _TempStorage private_storage;  // __shared__
    return private_storage;
  }

  BlockStore(_TempStorage& storage, int) : temp_storage(storage) {
    linear_tid = RowMajorTid(BLOCK_DIM_X, BLOCK_DIM_Y, BLOCK_DIM_Z);
  }

 public:
  struct TempStorage : Uninitialized<_TempStorage> {};

  BlockStore() : BlockStore(PrivateStorage(), 0) {}
  BlockStore(TempStorage& temp_storage)  // NOLINT: as CUB's
      : BlockStore(temp_storage.Alias(), 0) {}

  template <typename OutputIteratorT>
  void Store(OutputIteratorT block_itr, T (&items)[ITEMS_PER_THREAD]) {
    if constexpr (kTranspose || kWarpTranspose) {
      Exchange exchange(temp_storage, "cub::BlockStore");
      if constexpr (kTranspose) {
        exchange.BlockedToStriped(items);
        StoreDirectStriped<BLOCK_THREADS>(linear_tid, block_itr, items);
      } else {
        exchange.BlockedToWarpStriped(items);
        StoreDirectWarpStriped(linear_tid, block_itr, items);
      }
    } else if constexpr (ALGORITHM == BLOCK_STORE_STRIPED) {
      StoreDirectStriped<BLOCK_THREADS>(linear_tid, block_itr, items);
    } else if constexpr (ALGORITHM == BLOCK_STORE_VECTORIZE && std::is_pointer_v<OutputIteratorT>) {
      StoreDirectBlockedVectorized(linear_tid, block_itr, items);
    } else {
      StoreDirectBlocked(linear_tid, block_itr, items);
    }
  }
  template <typename OutputIteratorT>
  void Store(OutputIteratorT block_itr, T (&items)[ITEMS_PER_THREAD], int valid_items) {
    if constexpr (kTranspose || kWarpTranspose) {
      // Thread 0's valid_items counts for every thread (CUB broadcasts it).
      Exchange exchange(temp_storage, "cub::BlockStore");
      const int valid = exchange.ExchangeAndBroadcast(
          items, Arrangement::kBlocked,
          kTranspose ? Arrangement::kStriped : Arrangement::kWarpStriped, kWarpTranspose,
          valid_items);
      if constexpr (kTranspose) {
        StoreDirectStriped<BLOCK_THREADS>(linear_tid, block_itr, items, valid);
      } else {
        StoreDirectWarpStriped(linear_tid, block_itr, items, valid);
      }
    } else if constexpr (ALGORITHM == BLOCK_STORE_STRIPED) {
      StoreDirectStriped<BLOCK_THREADS>(linear_tid, block_itr, items, valid_items);
    } else {
      StoreDirectBlocked(linear_tid, block_itr, items, valid_items);
    }
  }
};

// ============================================================================
// BlockRadixSort: a stable sort of the tile by the keys' bit-ordered bits in
// [begin_bit, end_bit), which is the order CUB's LSD radix passes give.
template <typename KeyT, int BLOCK_DIM_X, int ITEMS_PER_THREAD, typename ValueT = NullType,
          int RADIX_BITS = 4, bool MEMOIZE_OUTER_SCAN = true,
          BlockScanAlgorithm INNER_SCAN_ALGORITHM = BLOCK_SCAN_WARP_SCANS,
          cudaSharedMemConfig SMEM_CONFIG = cudaSharedMemBankSizeFourByte, int BLOCK_DIM_Y = 1,
          int BLOCK_DIM_Z = 1>
class BlockRadixSort {
  static constexpr int BLOCK_THREADS = BLOCK_DIM_X * BLOCK_DIM_Y * BLOCK_DIM_Z;
  static constexpr int TILE = BLOCK_THREADS * ITEMS_PER_THREAD;
  static constexpr bool KEYS_ONLY = std::is_same_v<ValueT, NullType>;
  static constexpr size_t kValueBytes = KEYS_ONLY ? 1 : TILE * sizeof(ValueT);
  using Arrangement = kerneleval_detail::Arrangement;

  struct _TempStorage {
    alignas(KeyT) unsigned char keys[TILE * sizeof(KeyT)];
    alignas(std::conditional_t<KEYS_ONLY, char, ValueT>) unsigned char values[kValueBytes];
  };
  _TempStorage& temp_storage;
  int linear_tid;

  static _TempStorage& PrivateStorage() {
    static thread_local _TempStorage private_storage;  // __shared__
    return private_storage;
  }

  KERNELEVAL_CPU_UNCHECKED void SortTile(int begin_bit, int end_bit, bool descending) {
    kerneleval_detail::SortTile<KeyT, ValueT>(temp_storage.keys, temp_storage.values, TILE,
                                              begin_bit, end_bit, descending);
  }

  void Run(KeyT (&keys)[ITEMS_PER_THREAD], ValueT* values, int begin_bit, int end_bit,
           bool descending, Arrangement to) {
    using kerneleval_detail::TileGet;
    using kerneleval_detail::TilePut;
    TilePut<BLOCK_THREADS, ITEMS_PER_THREAD>(temp_storage.keys, Arrangement::kBlocked, linear_tid,
                                             keys);
    if constexpr (!KEYS_ONLY) {
      TilePut<BLOCK_THREADS, ITEMS_PER_THREAD>(
          temp_storage.values, Arrangement::kBlocked, linear_tid,
          *reinterpret_cast<ValueT(*)[ITEMS_PER_THREAD]>(values));
    }
    __syncthreads();
    if (linear_tid == 0) SortTile(begin_bit, end_bit, descending);
    __syncthreads();
    TileGet<BLOCK_THREADS, ITEMS_PER_THREAD, KeyT>(temp_storage.keys, to, linear_tid, keys);
    if constexpr (!KEYS_ONLY) {
      TileGet<BLOCK_THREADS, ITEMS_PER_THREAD, ValueT>(
          temp_storage.values, to, linear_tid,
          *reinterpret_cast<ValueT(*)[ITEMS_PER_THREAD]>(values));
    }
    __syncthreads();
  }

  BlockRadixSort(_TempStorage& storage, int) : temp_storage(storage) {
    kerneleval_detail::CheckBlockShape("cub::BlockRadixSort", BLOCK_DIM_X, BLOCK_DIM_Y,
                                       BLOCK_DIM_Z);
    linear_tid = RowMajorTid(BLOCK_DIM_X, BLOCK_DIM_Y, BLOCK_DIM_Z);
  }

  template <class DecomposerT>
  static constexpr bool kIsDecomposer = !std::is_convertible_v<DecomposerT, int>;
  template <class DecomposerT>
  static void RefuseDecomposer() {
    static_assert(kerneleval_detail::kUnsupported<DecomposerT>,
                  "cub::BlockRadixSort with a decomposer (custom key types) is not supported by "
                  "kerneleval's CPU backend");
  }

 public:
  struct TempStorage : Uninitialized<_TempStorage> {};

  BlockRadixSort() : BlockRadixSort(PrivateStorage(), 0) {}
  BlockRadixSort(TempStorage& temp_storage)  // NOLINT: as CUB's
      : BlockRadixSort(temp_storage.Alias(), 0) {}

  void Sort(KeyT (&keys)[ITEMS_PER_THREAD], int begin_bit = 0, int end_bit = sizeof(KeyT) * 8) {
    Run(keys, nullptr, begin_bit, end_bit, false, Arrangement::kBlocked);
  }
  void Sort(KeyT (&keys)[ITEMS_PER_THREAD], ValueT (&values)[ITEMS_PER_THREAD], int begin_bit = 0,
            int end_bit = sizeof(KeyT) * 8) {
    Run(keys, values, begin_bit, end_bit, false, Arrangement::kBlocked);
  }
  void SortDescending(KeyT (&keys)[ITEMS_PER_THREAD], int begin_bit = 0,
                      int end_bit = sizeof(KeyT) * 8) {
    Run(keys, nullptr, begin_bit, end_bit, true, Arrangement::kBlocked);
  }
  void SortDescending(KeyT (&keys)[ITEMS_PER_THREAD], ValueT (&values)[ITEMS_PER_THREAD],
                      int begin_bit = 0, int end_bit = sizeof(KeyT) * 8) {
    Run(keys, values, begin_bit, end_bit, true, Arrangement::kBlocked);
  }
  void SortBlockedToStriped(KeyT (&keys)[ITEMS_PER_THREAD], int begin_bit = 0,
                            int end_bit = sizeof(KeyT) * 8) {
    Run(keys, nullptr, begin_bit, end_bit, false, Arrangement::kStriped);
  }
  void SortBlockedToStriped(KeyT (&keys)[ITEMS_PER_THREAD], ValueT (&values)[ITEMS_PER_THREAD],
                            int begin_bit = 0, int end_bit = sizeof(KeyT) * 8) {
    Run(keys, values, begin_bit, end_bit, false, Arrangement::kStriped);
  }
  void SortDescendingBlockedToStriped(KeyT (&keys)[ITEMS_PER_THREAD], int begin_bit = 0,
                                      int end_bit = sizeof(KeyT) * 8) {
    Run(keys, nullptr, begin_bit, end_bit, true, Arrangement::kStriped);
  }
  void SortDescendingBlockedToStriped(KeyT (&keys)[ITEMS_PER_THREAD],
                                      ValueT (&values)[ITEMS_PER_THREAD], int begin_bit = 0,
                                      int end_bit = sizeof(KeyT) * 8) {
    Run(keys, values, begin_bit, end_bit, true, Arrangement::kStriped);
  }

  // The decomposer overloads (custom key types): refused.
#define KERNELEVAL_CUB_REFUSE_DECOMPOSER(name)                                              \
  template <class DecomposerT, class... Rest>                                               \
  std::enable_if_t<kIsDecomposer<DecomposerT>> name(KeyT(&)[ITEMS_PER_THREAD], DecomposerT, \
                                                    Rest...) {                              \
    RefuseDecomposer<DecomposerT>();                                                        \
  }                                                                                         \
  template <class DecomposerT, class... Rest>                                               \
  std::enable_if_t<kIsDecomposer<DecomposerT>> name(                                        \
      KeyT(&)[ITEMS_PER_THREAD], ValueT(&)[ITEMS_PER_THREAD], DecomposerT, Rest...) {       \
    RefuseDecomposer<DecomposerT>();                                                        \
  }
  KERNELEVAL_CUB_REFUSE_DECOMPOSER(Sort)
  KERNELEVAL_CUB_REFUSE_DECOMPOSER(SortDescending)
  KERNELEVAL_CUB_REFUSE_DECOMPOSER(SortBlockedToStriped)
  KERNELEVAL_CUB_REFUSE_DECOMPOSER(SortDescendingBlockedToStriped)
#undef KERNELEVAL_CUB_REFUSE_DECOMPOSER
};

// ============================================================================
// What cub.cuh declares and this backend does not emulate: using one fails
// to compile, saying so (the message is shown with g++'s diagnostics).
namespace kerneleval_detail {
template <auto...>
inline constexpr bool kUnsupportedValue = false;
}  // namespace kerneleval_detail

#define KERNELEVAL_CUB_UNSUPPORTED_MESSAGE(name)                                     \
  "cub::" #name                                                                      \
  " is not supported by kerneleval's CPU backend (it emulates BlockReduce, "         \
  "BlockScan, BlockLoad, BlockStore, BlockExchange, BlockRadixSort, WarpReduce and " \
  "WarpScan)"
#define KERNELEVAL_CUB_UNSUPPORTED_CLASS(name, dependent)               \
  {                                                                     \
    static_assert(dependent, KERNELEVAL_CUB_UNSUPPORTED_MESSAGE(name)); \
                                                                        \
   public:                                                              \
    struct TempStorage {};                                              \
    template <class... A>                                               \
    name(A&&...) {}                                                     \
  };

template <typename T, int BLOCK_DIM_X, int BLOCK_DIM_Y = 1, int BLOCK_DIM_Z = 1>
class BlockAdjacentDifference KERNELEVAL_CUB_UNSUPPORTED_CLASS(
    BlockAdjacentDifference,
    kerneleval_detail::kUnsupported<T>) template <typename T, int BLOCK_DIM_X, int BLOCK_DIM_Y = 1,
                                                  int BLOCK_DIM_Z = 1>
class BlockDiscontinuity KERNELEVAL_CUB_UNSUPPORTED_CLASS(
    BlockDiscontinuity,
    kerneleval_detail::kUnsupported<
        T>) template <typename T, int BLOCK_DIM_X, int ITEMS_PER_THREAD, int BINS,
                      BlockHistogramAlgorithm ALGORITHM = BLOCK_HISTO_SORT, int BLOCK_DIM_Y = 1,
                      int BLOCK_DIM_Z = 1>
class BlockHistogram KERNELEVAL_CUB_UNSUPPORTED_CLASS(
    BlockHistogram,
    kerneleval_detail::kUnsupported<T>) template <typename KeyT, int BLOCK_DIM_X,
                                                  int ITEMS_PER_THREAD, typename ValueT = NullType,
                                                  int BLOCK_DIM_Y = 1, int BLOCK_DIM_Z = 1>
class BlockMergeSort KERNELEVAL_CUB_UNSUPPORTED_CLASS(
    BlockMergeSort,
    kerneleval_detail::kUnsupported<
        KeyT>) template <int BLOCK_DIM_X, int RADIX_BITS, bool IS_DESCENDING,
                         bool MEMOIZE_OUTER_SCAN = true,
                         BlockScanAlgorithm INNER_SCAN_ALGORITHM = BLOCK_SCAN_WARP_SCANS,
                         cudaSharedMemConfig SMEM_CONFIG = cudaSharedMemBankSizeFourByte,
                         int BLOCK_DIM_Y = 1, int BLOCK_DIM_Z = 1>
class BlockRadixRank KERNELEVAL_CUB_UNSUPPORTED_CLASS(
    BlockRadixRank,
    kerneleval_detail::kUnsupportedValue<
        BLOCK_DIM_X>) template <int BLOCK_DIM_X, int RADIX_BITS, bool IS_DESCENDING,
                                BlockScanAlgorithm INNER_SCAN_ALGORITHM = BLOCK_SCAN_WARP_SCANS,
                                int BLOCK_DIM_Y = 1, int BLOCK_DIM_Z = 1>
class BlockRadixRankMatch KERNELEVAL_CUB_UNSUPPORTED_CLASS(
    BlockRadixRankMatch,
    kerneleval_detail::kUnsupportedValue<
        BLOCK_DIM_X>) template <typename ItemT, int BLOCK_DIM_X, int RUNS_PER_THREAD,
                                int DECODED_ITEMS_PER_THREAD, typename DecodedOffsetT = uint32_t,
                                int BLOCK_DIM_Y = 1, int BLOCK_DIM_Z = 1>
class BlockRunLengthDecode KERNELEVAL_CUB_UNSUPPORTED_CLASS(
    BlockRunLengthDecode,
    kerneleval_detail::kUnsupported<ItemT>) template <typename T, int BLOCK_DIM_X,
                                                      int BLOCK_DIM_Y = 1, int BLOCK_DIM_Z = 1>
class BlockShuffle
    KERNELEVAL_CUB_UNSUPPORTED_CLASS(BlockShuffle, kerneleval_detail::kUnsupported<T>) template <
        typename InputT, int ITEMS_PER_THREAD, int LOGICAL_WARP_THREADS = 32,
        WarpExchangeAlgorithm WARP_EXCHANGE_ALGORITHM = WARP_EXCHANGE_SMEM>
    class WarpExchange KERNELEVAL_CUB_UNSUPPORTED_CLASS(
        WarpExchange, kerneleval_detail::kUnsupported<
                          InputT>) template <typename InputT, int ITEMS_PER_THREAD,
                                             WarpLoadAlgorithm ALGORITHM = WARP_LOAD_DIRECT,
                                             int LOGICAL_WARP_THREADS = 32>
    class WarpLoad
    KERNELEVAL_CUB_UNSUPPORTED_CLASS(WarpLoad, kerneleval_detail::kUnsupported<InputT>) template <
        typename KeyT, int ITEMS_PER_THREAD, int LOGICAL_WARP_THREADS = 32,
        typename ValueT = NullType>
    class WarpMergeSort KERNELEVAL_CUB_UNSUPPORTED_CLASS(
        WarpMergeSort, kerneleval_detail::kUnsupported<
                           KeyT>) template <typename T, int ITEMS_PER_THREAD,
                                            WarpStoreAlgorithm ALGORITHM = WARP_STORE_DIRECT,
                                            int LOGICAL_WARP_THREADS = 32>
    class WarpStore KERNELEVAL_CUB_UNSUPPORTED_CLASS(WarpStore, kerneleval_detail::kUnsupported<T>)
#undef KERNELEVAL_CUB_UNSUPPORTED_CLASS

// The device-wide algorithms (host-launched): every entry point refuses.
#define KERNELEVAL_CUB_DEVICE_METHOD(S, m)                                                       \
  template <class... A>                                                                          \
  static cudaError_t m(A&&...) {                                                                 \
    static_assert(kerneleval_detail::kUnsupported<A...>, KERNELEVAL_CUB_UNSUPPORTED_MESSAGE(S)); \
    return cudaErrorNotSupported;                                                                \
  }
#define KERNELEVAL_CUB_DEVICE(S)                                                                                  \
  struct S {                                                                                                      \
    KERNELEVAL_CUB_DEVICE_METHOD(S, Sum)                                                                          \
    KERNELEVAL_CUB_DEVICE_METHOD(S, Reduce)                                                                       \
    KERNELEVAL_CUB_DEVICE_METHOD(S, Min)                                                                          \
    KERNELEVAL_CUB_DEVICE_METHOD(S, Max)                                                                          \
    KERNELEVAL_CUB_DEVICE_METHOD(S, ArgMin)                                                                       \
    KERNELEVAL_CUB_DEVICE_METHOD(S, ArgMax) KERNELEVAL_CUB_DEVICE_METHOD(                                         \
        S,                                                                                                        \
        ReduceByKey) KERNELEVAL_CUB_DEVICE_METHOD(S,                                                              \
                                                  TransformReduce) KERNELEVAL_CUB_DEVICE_METHOD(S,                \
                                                                                                ExclusiveSum)     \
        KERNELEVAL_CUB_DEVICE_METHOD(S, InclusiveSum) KERNELEVAL_CUB_DEVICE_METHOD(                               \
            S, ExclusiveScan) KERNELEVAL_CUB_DEVICE_METHOD(S, InclusiveScan)                                      \
            KERNELEVAL_CUB_DEVICE_METHOD(S, ExclusiveSumByKey) KERNELEVAL_CUB_DEVICE_METHOD(                      \
                S, InclusiveSumByKey) KERNELEVAL_CUB_DEVICE_METHOD(S, ExclusiveScanByKey)                         \
                KERNELEVAL_CUB_DEVICE_METHOD(S, InclusiveScanByKey) KERNELEVAL_CUB_DEVICE_METHOD(                 \
                    S, SortKeys) KERNELEVAL_CUB_DEVICE_METHOD(S, SortPairs)                                       \
                    KERNELEVAL_CUB_DEVICE_METHOD(S, SortKeysDescending) KERNELEVAL_CUB_DEVICE_METHOD(             \
                        S, SortPairsDescending) KERNELEVAL_CUB_DEVICE_METHOD(S, StableSortKeys)                   \
                        KERNELEVAL_CUB_DEVICE_METHOD(S, StableSortPairs) KERNELEVAL_CUB_DEVICE_METHOD(            \
                            S,                                                                                    \
                            StableSortKeysDescending) KERNELEVAL_CUB_DEVICE_METHOD(S,                             \
                                                                                   StableSortPairsDescending)     \
                            KERNELEVAL_CUB_DEVICE_METHOD(S, HistogramEven) KERNELEVAL_CUB_DEVICE_METHOD(          \
                                S,                                                                                \
                                HistogramRange) KERNELEVAL_CUB_DEVICE_METHOD(S,                                   \
                                                                             MultiHistogramEven)                  \
                                KERNELEVAL_CUB_DEVICE_METHOD(                                                     \
                                    S, MultiHistogramRange) KERNELEVAL_CUB_DEVICE_METHOD(S,                       \
                                                                                         Flagged)                 \
                                    KERNELEVAL_CUB_DEVICE_METHOD(S, If) KERNELEVAL_CUB_DEVICE_METHOD(             \
                                        S, Unique) KERNELEVAL_CUB_DEVICE_METHOD(S, UniqueByKey)                   \
                                        KERNELEVAL_CUB_DEVICE_METHOD(                                             \
                                            S,                                                                    \
                                            Encode) KERNELEVAL_CUB_DEVICE_METHOD(S,                               \
                                                                                 NonTrivialRuns)                  \
                                            KERNELEVAL_CUB_DEVICE_METHOD(                                         \
                                                S,                                                                \
                                                Batched) KERNELEVAL_CUB_DEVICE_METHOD(S,                          \
                                                                                      Transform)                  \
                                                KERNELEVAL_CUB_DEVICE_METHOD(                                     \
                                                    S,                                                            \
                                                    TransformIf) KERNELEVAL_CUB_DEVICE_METHOD(S,                  \
                                                                                              Bulk)               \
                                                    KERNELEVAL_CUB_DEVICE_METHOD(                                 \
                                                        S,                                                        \
                                                        ForEach) KERNELEVAL_CUB_DEVICE_METHOD(S,                  \
                                                                                              ForEachN)           \
                                                        KERNELEVAL_CUB_DEVICE_METHOD(S,                           \
                                                                                     ForEachCopy)                 \
                                                            KERNELEVAL_CUB_DEVICE_METHOD(                         \
                                                                S, ForEachCopyN)                                  \
                                                                KERNELEVAL_CUB_DEVICE_METHOD(                     \
                                                                    S, SubtractLeft)                              \
                                                                    KERNELEVAL_CUB_DEVICE_METHOD(                 \
                                                                        S, SubtractRight)                         \
                                                                        KERNELEVAL_CUB_DEVICE_METHOD(             \
                                                                            S, SubtractLeftCopy)                  \
                                                                            KERNELEVAL_CUB_DEVICE_METHOD(         \
                                                                                S,                                \
                                                                                SubtractRightCopy)                \
                                                                                KERNELEVAL_CUB_DEVICE_METHOD(     \
                                                                                    S, MergeKeys)                 \
                                                                                    KERNELEVAL_CUB_DEVICE_METHOD( \
                                                                                        S,                        \
                                                                                        MergePairs)               \
  };
        KERNELEVAL_CUB_DEVICE(DeviceAdjacentDifference) KERNELEVAL_CUB_DEVICE(DeviceCopy)
            KERNELEVAL_CUB_DEVICE(DeviceFor) KERNELEVAL_CUB_DEVICE(DeviceHistogram)
                KERNELEVAL_CUB_DEVICE(DeviceMemcpy) KERNELEVAL_CUB_DEVICE(DeviceMerge)
                    KERNELEVAL_CUB_DEVICE(DeviceMergeSort) KERNELEVAL_CUB_DEVICE(DevicePartition)
                        KERNELEVAL_CUB_DEVICE(DeviceRadixSort) KERNELEVAL_CUB_DEVICE(DeviceReduce)
                            KERNELEVAL_CUB_DEVICE(DeviceRunLengthEncode)
                                KERNELEVAL_CUB_DEVICE(DeviceScan)
                                    KERNELEVAL_CUB_DEVICE(DeviceSegmentedRadixSort)
                                        KERNELEVAL_CUB_DEVICE(DeviceSegmentedReduce)
                                            KERNELEVAL_CUB_DEVICE(DeviceSegmentedSort)
                                                KERNELEVAL_CUB_DEVICE(DeviceSelect)
                                                    KERNELEVAL_CUB_DEVICE(DeviceTransform)
#undef KERNELEVAL_CUB_DEVICE
#undef KERNELEVAL_CUB_DEVICE_METHOD
#undef KERNELEVAL_CUB_UNSUPPORTED_MESSAGE

}  // namespace cub
