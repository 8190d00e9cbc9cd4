// Kernel source for tests on the test driver: its kernels run in the CUDA
// worker's process, whose environment they can write and read. That gives a
// test kernel a way to say where something is in "device memory" (Publish)
// and another to find it (Published), where a GPU kernel would have to scan
// memory for it: how the tests show what one program could take from another
// while they share a context. Prepend kSideChannelSource to a kernel's source;
// it compiles to nothing under NVRTC (no KERNELEVAL_CPU_PRELUDE_H_).
#pragma once

namespace kerneleval::fake_cuda {

inline constexpr char kSideChannelSource[] = R"(
#ifdef KERNELEVAL_CPU_PRELUDE_H_
extern "C" int setenv(const char* name, const char* value, int overwrite);
extern "C" char* getenv(const char* name);
extern "C" int msync(void* address, unsigned long bytes, int flags);
// Puts `where` in the environment variable `name`, as 16 hex digits.
static void Publish(const char* name, const void* where) {
  char text[17] = {};
  unsigned long long address = (unsigned long long)where;
  for (int d = 15; d >= 0; --d, address >>= 4) text[d] = "0123456789abcdef"[address & 15];
  setenv(name, text, 1);
}
// The address in `name`; null when unset, unmapped or `mine`.
static void* Published(const char* name, const void* mine = nullptr) {
  const char* text = getenv(name);
  unsigned long long address = 0;
  for (int d = 0; text != nullptr && d < 16; ++d)
    address = address * 16 + (text[d] <= '9' ? text[d] - '0' : text[d] - 'a' + 10);
  if (address == 0 || address == (unsigned long long)mine) return nullptr;
  if (msync((void*)(address & ~4095ull), 1, 1 /* MS_ASYNC */) != 0) return nullptr;
  return (void*)address;
}
#endif
)";

}  // namespace kerneleval::fake_cuda
