#include "evaluator/cpu/elf_symbols.h"

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <map>
#include <optional>

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

// An ELF64 file's header and section headers, read with bounds checks.
class ElfView {
 public:
  static absl::StatusOr<ElfView> Open(std::string_view elf) {
    ElfView view;
    view.elf_ = elf;
    if (!ReadAt(elf, 0, &view.header_) || std::memcmp(view.header_.e_ident, ELFMAG, SELFMAG) != 0 ||
        view.header_.e_ident[EI_CLASS] != ELFCLASS64 ||
        view.header_.e_shentsize != sizeof(Elf64_Shdr)) {
      return absl::FailedPreconditionError("not an ELF64 file");
    }
    view.sections_.resize(view.header_.e_shnum);
    for (uint64_t s = 0; s < view.header_.e_shnum; ++s) {
      if (!ReadAt(elf, view.header_.e_shoff + s * sizeof(Elf64_Shdr), &view.sections_[s])) {
        return absl::FailedPreconditionError("section headers past the end");
      }
    }
    return view;
  }

  [[nodiscard]] const std::vector<Elf64_Shdr>& sections() const { return sections_; }

  // Section `index`'s bytes; nullopt past the end (SHT_NOBITS: empty).
  [[nodiscard]] std::optional<std::string_view> Contents(uint64_t index) const {
    if (index >= sections_.size()) return std::nullopt;
    const Elf64_Shdr& section = sections_[index];
    if (section.sh_type == SHT_NOBITS) return std::string_view();
    if (section.sh_offset > elf_.size() || elf_.size() - section.sh_offset < section.sh_size) {
      return std::nullopt;
    }
    return elf_.substr(section.sh_offset, section.sh_size);
  }

  // The NUL-terminated string at `offset` of string table `table`.
  [[nodiscard]] std::optional<std::string_view> String(uint64_t table, uint64_t offset) const {
    const std::optional<std::string_view> strings = Contents(table);
    if (!strings.has_value() || offset >= strings->size()) return std::nullopt;
    const size_t end = strings->find('\0', offset);
    if (end == std::string_view::npos) return std::nullopt;
    return strings->substr(offset, end - offset);
  }

  [[nodiscard]] std::string SectionName(uint64_t index) const {
    if (index >= sections_.size()) return "";
    return std::string(String(header_.e_shstrndx, sections_[index].sh_name).value_or(""));
  }

 private:
  std::string_view elf_;
  Elf64_Ehdr header_{};
  std::vector<Elf64_Shdr> sections_;
};

// Calls `visit` on every symbol of the tables of type `type` (SHT_SYMTAB
// or SHT_DYNSYM), with its name.
template <class Visit>
absl::Status ForEachSymbol(const ElfView& view, uint32_t type, Visit visit) {
  for (uint64_t s = 0; s < view.sections().size(); ++s) {
    const Elf64_Shdr& table = view.sections()[s];
    if (table.sh_type != type) continue;
    const std::optional<std::string_view> bytes = view.Contents(s);
    if (!bytes.has_value()) return absl::FailedPreconditionError("a symbol table past the end");
    for (uint64_t k = 0; k < bytes->size() / sizeof(Elf64_Sym); ++k) {
      Elf64_Sym symbol;
      std::memcpy(&symbol, bytes->data() + k * sizeof(Elf64_Sym), sizeof(symbol));
      const std::optional<std::string_view> name = view.String(table.sh_link, symbol.st_name);
      if (!name.has_value()) {
        return absl::FailedPreconditionError(absl::StrCat("symbol ", k, "'s name past the end"));
      }
      visit(symbol, *name);
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<std::string>> UndefinedWeakSymbols(std::string_view elf) {
  absl::StatusOr<ElfView> view = ElfView::Open(elf);
  if (!view.ok()) return view.status();
  std::vector<std::string> names;
  absl::Status status =
      ForEachSymbol(*view, SHT_DYNSYM, [&](const Elf64_Sym& symbol, std::string_view name) {
        if (symbol.st_shndx == SHN_UNDEF && ELF64_ST_BIND(symbol.st_info) == STB_WEAK) {
          names.emplace_back(name);
        }
      });
  if (!status.ok()) return status;
  return names;
}

absl::StatusOr<LoadTimeFunctions> ReadLoadTimeFunctions(std::string_view elf) {
  absl::StatusOr<ElfView> view = ElfView::Open(elf);
  if (!view.ok()) return view.status();
  LoadTimeFunctions found;

  // Function names by address, and the symbols inside .init and .fini.
  std::map<uint64_t, std::string> functions;
  std::vector<uint64_t> init_sections;
  for (uint64_t s = 0; s < view->sections().size(); ++s) {
    const std::string name = view->SectionName(s);
    if (name == ".init" || name == ".fini") init_sections.push_back(s);
  }
  absl::Status status =
      ForEachSymbol(*view, SHT_SYMTAB, [&](const Elf64_Sym& symbol, std::string_view name) {
        const unsigned type = ELF64_ST_TYPE(symbol.st_info);
        if (symbol.st_shndx == SHN_UNDEF) return;
        if (type == STT_GNU_IFUNC) found.indirect.emplace_back(name);
        if (type == STT_FUNC || type == STT_GNU_IFUNC) functions.emplace(symbol.st_value, name);
        for (uint64_t s : init_sections) {
          if (symbol.st_shndx == s && (type == STT_FUNC || type == STT_NOTYPE) && name != "_init" &&
              name != "_fini" && !name.empty()) {
            found.in_init_sections.emplace_back(name);
          }
        }
      });
  if (!status.ok()) return status;
  status = ForEachSymbol(*view, SHT_DYNSYM, [&](const Elf64_Sym& symbol, std::string_view name) {
    if (symbol.st_shndx != SHN_UNDEF && ELF64_ST_TYPE(symbol.st_info) == STT_GNU_IFUNC) {
      found.indirect.emplace_back(name);
    }
  });
  if (!status.ok()) return status;

  // What the dynamic loader writes into each slot: R_X86_64_RELATIVE's
  // addend (a library's arrays hold link-time addresses only so).
  std::map<uint64_t, uint64_t> relocated;
  for (uint64_t s = 0; s < view->sections().size(); ++s) {
    if (view->sections()[s].sh_type != SHT_RELA) continue;
    const std::optional<std::string_view> bytes = view->Contents(s);
    if (!bytes.has_value()) return absl::FailedPreconditionError("relocations past the end");
    for (uint64_t k = 0; k < bytes->size() / sizeof(Elf64_Rela); ++k) {
      Elf64_Rela rela;
      std::memcpy(&rela, bytes->data() + k * sizeof(Elf64_Rela), sizeof(rela));
      const uint32_t type = ELF64_R_TYPE(rela.r_info);
      if (type == R_X86_64_RELATIVE) relocated[rela.r_offset] = rela.r_addend;
      if (type == R_X86_64_IRELATIVE) {
        found.indirect.push_back(absl::StrCat("0x", absl::Hex(rela.r_addend)));
      }
    }
  }
  auto entries = [&](uint32_t type, std::vector<std::string>* out) -> absl::Status {
    for (uint64_t s = 0; s < view->sections().size(); ++s) {
      const Elf64_Shdr& section = view->sections()[s];
      if (section.sh_type != type) continue;
      const std::optional<std::string_view> bytes = view->Contents(s);
      if (!bytes.has_value()) return absl::FailedPreconditionError("an init array past the end");
      for (uint64_t k = 0; k < bytes->size() / sizeof(uint64_t); ++k) {
        const uint64_t slot = section.sh_addr + k * sizeof(uint64_t);
        uint64_t target = 0;
        std::memcpy(&target, bytes->data() + k * sizeof(uint64_t), sizeof(target));
        if (auto r = relocated.find(slot); r != relocated.end()) target = r->second;
        auto function = functions.find(target);
        out->push_back(function != functions.end() ? function->second
                                                   : absl::StrCat("0x", absl::Hex(target)));
      }
    }
    return absl::OkStatus();
  };
  if (status = entries(SHT_INIT_ARRAY, &found.init_array); !status.ok()) return status;
  if (status = entries(SHT_FINI_ARRAY, &found.fini_array); !status.ok()) return status;
  if (status = entries(SHT_PREINIT_ARRAY, &found.preinit_array); !status.ok()) return status;
  return found;
}

absl::StatusOr<std::vector<std::string>> RefusedObjectContents(std::string_view object) {
  absl::StatusOr<ElfView> view = ElfView::Open(object);
  if (!view.ok()) return view.status();
  std::vector<std::string> found;
  auto is_text = [](std::string_view name) {
    return name == ".text" || name.substr(0, 6) == ".text.";
  };
  // The linker pastes input sections named .init or .fini into _init and
  // _fini whatever their flags (g++ marks a data object's section "aw").
  auto is_init = [](std::string_view name) {
    return name == ".init" || name == ".fini" || name.substr(0, 6) == ".init." ||
           name.substr(0, 6) == ".fini.";
  };
  // Sections crtbeginS.o's frame_dummy and __do_global_dtors_aux read at
  // load and unload: a non-empty .tm_clone_table made frame_dummy call
  // _ITM_registerTMCloneTable, which the submission defined (sweep 45).
  auto read_by_crt = [](std::string_view name) {
    return name == ".tm_clone_table" || name == ".jcr" || name.substr(0, 6) == ".ctors" ||
           name.substr(0, 6) == ".dtors" || name.substr(0, 14) == ".gnu.linkonce.";
  };
  std::vector<bool> runs_as_code(view->sections().size(), false);
  for (uint64_t s = 0; s < view->sections().size(); ++s) {
    const Elf64_Shdr& section = view->sections()[s];
    const std::string name = view->SectionName(s);
    if (read_by_crt(name)) found.push_back(absl::StrCat("section ", name));
    runs_as_code[s] = (section.sh_flags & SHF_EXECINSTR) != 0 || is_text(name) || is_init(name);
    if (!runs_as_code[s]) continue;
    if (!is_text(name)) {
      found.push_back(absl::StrCat("section ", name));
    } else if ((section.sh_flags & SHF_WRITE) != 0) {
      found.push_back(absl::StrCat("writable section ", name));
    }
  }
  // The names crt's code calls (weakly) or defines: crti.o's _init calls
  // __gmon_start__ when it is defined, and a submission's definition ran
  // at load (sweep 45); crtbeginS.o calls the _ITM_ pair and __cxa_finalize.
  constexpr std::string_view kCrtNames[] = {"__gmon_start__",
                                            "_ITM_registerTMCloneTable",
                                            "_ITM_deregisterTMCloneTable",
                                            "__cxa_finalize",
                                            "__TMC_END__",
                                            "__dso_handle",
                                            "_init",
                                            "_fini",
                                            "frame_dummy",
                                            "__do_global_dtors_aux"};
  absl::Status status =
      ForEachSymbol(*view, SHT_SYMTAB, [&](const Elf64_Sym& symbol, std::string_view name) {
        const unsigned type = ELF64_ST_TYPE(symbol.st_info);
        if (symbol.st_shndx != SHN_UNDEF &&
            std::find(std::begin(kCrtNames), std::end(kCrtNames), name) != std::end(kCrtNames)) {
          found.push_back(absl::StrCat("a definition of ", std::string(name)));
        }
        if (type != STT_OBJECT && type != STT_TLS && type != STT_COMMON) return;
        if (symbol.st_shndx == SHN_UNDEF || symbol.st_shndx >= view->sections().size()) {
          return;
        }
        if (runs_as_code[symbol.st_shndx]) {
          found.push_back(
              absl::StrCat("data ", std::string(name), " in ", view->SectionName(symbol.st_shndx)));
        }
      });
  if (!status.ok()) return status;
  return found;
}

}  // namespace kerneleval::cpu
