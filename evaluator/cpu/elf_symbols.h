// What the host build checks in an ELF64 shared object it linked
// (HostCompiler): the symbols its dynamic symbol table refers to weakly
// without defining them (the CPU backend's two builds define different
// names, and a weak reference to one tells them apart), and the code that
// would run when a runner loads it (a GPU runs none).
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

// The functions the dynamic loader calls in a shared object, each by its
// .symtab name (the entry's address in hex where no function starts there).
struct LoadTimeFunctions {
  std::vector<std::string> init_array;     // DT_INIT_ARRAY, in order
  std::vector<std::string> fini_array;     // DT_FINI_ARRAY
  std::vector<std::string> preinit_array;  // DT_PREINIT_ARRAY (ignored by glibc in a library)
  // Functions placed in the .init or .fini section (whose code runs as
  // part of _init / _fini), other than _init and _fini.
  std::vector<std::string> in_init_sections;
  // Indirect functions (STT_GNU_IFUNC symbols, R_X86_64_IRELATIVE
  // relocations): their resolvers run as the library is relocated.
  std::vector<std::string> indirect;
};

// Reads the above from the section headers: the arrays' slots hold their
// targets as R_X86_64_RELATIVE addends (or, unrelocated, in the slot).
// FailedPrecondition: not an ELF64 file, or a table past its end.
absl::StatusOr<LoadTimeFunctions> ReadLoadTimeFunctions(std::string_view elf);

// What the host build refuses in a relocatable object (the compiled
// translation unit, before the link): the executable sections not named `.text` or `.text.*`
// (`.init` or
// `.fini`, whose bytes the linker pastes into _init / _fini; a data object
// placed there ran as code at load, sweep 44), and the data objects in
// executable sections (bytes a kernel could call as machine code), the
// sections crt's code reads at load or unload (.tm_clone_table, .jcr,
// .ctors, .dtors, .gnu.linkonce.*), and definitions of the names crt's code
// calls or defines (__gmon_start__, which _init calls when defined;
// _ITM_registerTMCloneTable; ...). Each described for the submitter:
// "section .init", "data g_hook in .text", "a definition of __gmon_start__".
absl::StatusOr<std::vector<std::string>> RefusedObjectContents(std::string_view object);

}  // namespace kerneleval::cpu
