#include "evaluator/cpu/loaded_modules.h"

#include <link.h>

namespace kerneleval::cpu {
namespace {

// The x86-64 ELF TLS ABI's look-up of a module's thread-local data: the
// calling thread's address of `offset` in module `module`'s block.
struct ThreadLocalIndex {
  unsigned long module;  // NOLINT(google-runtime-int): the ABI's type
  unsigned long offset;  // NOLINT(google-runtime-int)
};

}  // namespace
}  // namespace kerneleval::cpu

extern "C" void* __tls_get_addr(  // NOLINT(bugprone-reserved-identifier)
    kerneleval::cpu::ThreadLocalIndex* index);

namespace kerneleval::cpu {

bool LoadedModule::Holds(uintptr_t address) const {
  for (const LoadedSegment& segment : segments) {
    if (segment.type == PT_LOAD && address - segment.begin < segment.bytes) return true;
  }
  return false;
}

std::vector<LoadedSegment> LoadedModule::SegmentsOf(uint32_t type, uint32_t flags) const {
  std::vector<LoadedSegment> found;
  for (const LoadedSegment& segment : segments) {
    if (segment.type == type && (segment.flags & flags) == flags) found.push_back(segment);
  }
  return found;
}

std::optional<LoadedModule> FindLoadedModule(absl::FunctionRef<bool(const LoadedModule&)> matches) {
  struct Search {
    absl::FunctionRef<bool(const LoadedModule&)> matches;
    std::optional<LoadedModule> found;
  } search{matches, std::nullopt};
  ::dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* state = static_cast<Search*>(data);
        LoadedModule module;
        module.path = info->dlpi_name ? info->dlpi_name : "";
        module.tls_module_id = info->dlpi_tls_modid;
        for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& segment = info->dlpi_phdr[i];
          module.segments.push_back({.type = segment.p_type,
                                     .flags = segment.p_flags,
                                     .begin = info->dlpi_addr + segment.p_vaddr,
                                     .bytes = segment.p_memsz,
                                     .file_bytes = segment.p_filesz});
        }
        if (!state->matches(module)) return 0;
        state->found = std::move(module);
        return 1;
      },
      &search);
  return search.found;
}

void* ThisThreadsTlsBlock(const LoadedModule& module) {
  if (module.tls_module_id == 0) return nullptr;
  ThreadLocalIndex index{.module = module.tls_module_id, .offset = 0};
  return __tls_get_addr(&index);
}

}  // namespace kerneleval::cpu
