// The symbols an ELF64 shared object's dynamic symbol table refers to
// weakly without defining them: the host build refuses a library with one
// beyond the linker's own (HostCompiler), since the CPU backend's two builds
// define different names and a weak reference to one tells them apart.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace kerneleval::cpu {

// The names of .dynsym's undefined weak symbols (STB_WEAK, SHN_UNDEF), in
// table order. `elf`: the file's bytes. FailedPrecondition: not an ELF64
// file, or a table or name past its end.
absl::StatusOr<std::vector<std::string>> UndefinedWeakSymbols(std::string_view elf);

}  // namespace kerneleval::cpu
