#include "evaluator/cpu/elf_symbols.h"

#include <elf.h>

#include <cstring>

#include "absl/strings/str_cat.h"

namespace kerneleval::cpu {
namespace {

// Reads a T at `offset` of `elf`; false past its end.
template <class T>
bool ReadAt(std::string_view elf, uint64_t offset, T* out) {
  if (offset > elf.size() || elf.size() - offset < sizeof(T)) return false;
  std::memcpy(out, elf.data() + offset, sizeof(T));
  return true;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> UndefinedWeakSymbols(std::string_view elf) {
  Elf64_Ehdr header;
  if (!ReadAt(elf, 0, &header) || std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 ||
      header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_shentsize != sizeof(Elf64_Shdr)) {
    return absl::FailedPreconditionError("not an ELF64 file");
  }
  auto section = [&](uint64_t index, Elf64_Shdr* out) {
    return index < header.e_shnum && ReadAt(elf, header.e_shoff + index * sizeof(Elf64_Shdr), out);
  };
  std::vector<std::string> names;
  for (uint64_t s = 0; s < header.e_shnum; ++s) {
    Elf64_Shdr symbols;
    if (!section(s, &symbols)) return absl::FailedPreconditionError("section headers past the end");
    if (symbols.sh_type != SHT_DYNSYM) continue;
    Elf64_Shdr strings;
    if (!section(symbols.sh_link, &strings) || strings.sh_offset > elf.size() ||
        elf.size() - strings.sh_offset < strings.sh_size) {
      return absl::FailedPreconditionError("the dynamic string table past the end");
    }
    const std::string_view table = elf.substr(strings.sh_offset, strings.sh_size);
    for (uint64_t k = 0; k < symbols.sh_size / sizeof(Elf64_Sym); ++k) {
      Elf64_Sym symbol;
      if (!ReadAt(elf, symbols.sh_offset + k * sizeof(Elf64_Sym), &symbol)) {
        return absl::FailedPreconditionError("the dynamic symbol table past the end");
      }
      if (symbol.st_shndx != SHN_UNDEF || ELF64_ST_BIND(symbol.st_info) != STB_WEAK) continue;
      const size_t end =
          symbol.st_name < table.size() ? table.find('\0', symbol.st_name) : std::string_view::npos;
      if (end == std::string_view::npos) {
        return absl::FailedPreconditionError(absl::StrCat("symbol ", k, "'s name past the end"));
      }
      names.emplace_back(table.substr(symbol.st_name, end - symbol.st_name));
    }
  }
  return names;
}

}  // namespace kerneleval::cpu
