#ifndef KERNELEVAL_EVALUATOR_CPU_LOADED_MODULES_H_
#define KERNELEVAL_EVALUATOR_CPU_LOADED_MODULES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"

namespace kerneleval::cpu {

// A module (the executable or a shared object) loaded in this process, as
// dl_iterate_phdr reports it: where its segments lie, for the race check's
// ranges (a submission's writable data) and __cvta_generic_to_shared's
// offsets (its thread-local block, where static __shared__ variables live).
struct LoadedSegment {
  uint32_t type = 0;   // PT_LOAD, PT_TLS, ...
  uint32_t flags = 0;  // PF_R | PF_W | PF_X
  uint64_t begin = 0;  // [address] p_vaddr plus the module's load address
  uint64_t bytes = 0;  // p_memsz
  // [bytes] p_filesz: what the file holds, the rest reads zeros (a TLS
  // segment's .tdata, then its .tbss)
  uint64_t file_bytes = 0;
};

struct LoadedModule {
  std::string path;  // as loaded ("" for the executable)
  std::vector<LoadedSegment> segments;
  // The module's TLS module id (0: no TLS block).
  size_t tls_module_id = 0;

  // Whether `address` lies in one of its PT_LOAD segments.
  bool Holds(uintptr_t address) const;
  // Its segments of `type` (and all of `flags`, when given).
  std::vector<LoadedSegment> SegmentsOf(uint32_t type, uint32_t flags = 0) const;
};

// The first loaded module, in dl_iterate_phdr's order, that `matches`.
std::optional<LoadedModule> FindLoadedModule(absl::FunctionRef<bool(const LoadedModule&)> matches);

// The calling thread's instance of `module`'s TLS block (nullptr: the
// module has none), allocated if the thread has not touched it yet.
// Through the dynamic linker's own look-up (__tls_get_addr), not
// dl_iterate_phdr's dlpi_tls_data: glibc's look-up there may answer null
// for a block that exists (it does not bring this thread's view of the
// loaded modules up to date), and the first block of a grid on such a
// thread then went without its shared-memory fill.
void* ThisThreadsTlsBlock(const LoadedModule& module);

}  // namespace kerneleval::cpu

#endif  // KERNELEVAL_EVALUATOR_CPU_LOADED_MODULES_H_
