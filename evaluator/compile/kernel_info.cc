#include "evaluator/compile/kernel_info.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <regex>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace kerneleval::compile {
namespace {

uint32_t ToU32(const std::string& digits) {
  uint32_t value = 0;
  return absl::SimpleAtoi(digits, &value) ? value : 0;
}

// ------------------------------------------------------------------ ELF

// Bounds-checked little-endian reads from the CUBIN.
class ByteReader {
 public:
  explicit ByteReader(absl::string_view bytes) : bytes_(bytes) {}
  [[nodiscard]] bool Has(uint64_t offset, uint64_t size) const {
    return offset <= bytes_.size() && size <= bytes_.size() - offset;
  }
  template <typename T>
  [[nodiscard]] T Read(uint64_t offset) const {
    T value = 0;
    if (Has(offset, sizeof(T))) std::memcpy(&value, bytes_.data() + offset, sizeof(T));
    return value;  // little-endian host (x86-64, aarch64)
  }
  [[nodiscard]] absl::string_view Slice(uint64_t offset, uint64_t size) const {
    return Has(offset, size) ? bytes_.substr(offset, size) : absl::string_view();
  }
  [[nodiscard]] std::string CString(uint64_t offset, uint64_t limit) const {
    std::string out;
    for (uint64_t i = offset; i < limit && i < bytes_.size() && bytes_[i] != '\0'; ++i) {
      out.push_back(bytes_[i]);
    }
    return out;
  }

 private:
  absl::string_view bytes_;
};

struct Section {
  std::string name;
  uint32_t type = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
  uint32_t link = 0;
};

// .nv.info attribute ids (EIATTR_*) and value formats (EIFMT_*).
constexpr uint8_t kFormatSizedValue = 0x04;  // EIFMT_SVAL: u16 size, then data
constexpr uint8_t kAttrMaxThreads = 0x05;    // EIATTR_MAX_THREADS: u32 x, y, z
constexpr uint8_t kAttrFrameSize = 0x11;     // EIATTR_FRAME_SIZE: u32 symbol, u32 bytes
constexpr uint8_t kAttrKparamInfo = 0x17;    // EIATTR_KPARAM_INFO: see below
constexpr uint8_t kAttrRegCount = 0x2f;      // EIATTR_REGCOUNT: u32 symbol, u32 registers
constexpr uint32_t kSectionSymtab = 2;       // SHT_SYMTAB
constexpr uint32_t kSectionNoBits = 8;       // SHT_NOBITS (.nv.shared.*)

struct Attribute {
  uint8_t id = 0;
  absl::string_view value;  // SVAL data; empty for the fixed-size formats
};

std::vector<Attribute> ReadAttributes(absl::string_view section) {
  std::vector<Attribute> attributes;
  const ByteReader reader(section);
  uint64_t at = 0;
  while (reader.Has(at, 4)) {
    const auto format = reader.Read<uint8_t>(at);
    const auto id = reader.Read<uint8_t>(at + 1);
    if (format == kFormatSizedValue) {
      const auto size = reader.Read<uint16_t>(at + 2);
      if (!reader.Has(at + 4, size)) break;
      attributes.push_back({id, reader.Slice(at + 4, size)});
      at += 4 + size;
    } else {
      // EIFMT_NVAL / BVAL / HVAL: two value bytes after the header.
      attributes.push_back({id, reader.Slice(at + 2, 2)});
      at += 4;
    }
  }
  return attributes;
}

// ------------------------------------------------------------- source text

// The source with comments, string and character literals replaced by spaces
// (offsets unchanged), so that a "(" inside them does not count.
std::string StripCommentsAndLiterals(absl::string_view source) {
  std::string out(source);
  size_t i = 0;
  while (i < out.size()) {
    if (out.compare(i, 2, "//") == 0) {
      while (i < out.size() && out[i] != '\n') out[i++] = ' ';
    } else if (out.compare(i, 2, "/*") == 0) {
      const size_t end = out.find("*/", i + 2);
      const size_t stop = end == std::string::npos ? out.size() : end + 2;
      for (; i < stop; ++i) {
        if (out[i] != '\n') out[i] = ' ';
      }
    } else if (out[i] == '"' || out[i] == '\'') {
      const char quote = out[i];
      out[i++] = ' ';
      while (i < out.size() && out[i] != quote && out[i] != '\n') {
        if (out[i] == '\\' && i + 1 < out.size()) out[i++] = ' ';
        out[i++] = ' ';
      }
      if (i < out.size() && out[i] == quote) out[i++] = ' ';
    } else {
      ++i;
    }
  }
  return out;
}

bool IsIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Splits at top-level commas (outside (), <>, [], {}).
std::vector<std::string> SplitTopLevel(absl::string_view text) {
  std::vector<std::string> parts;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '(' || c == '<' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == '>' || c == ']' || c == '}') --depth;
    if (c == ',' && depth == 0) {
      parts.emplace_back(absl::StripAsciiWhitespace(text.substr(start, i - start)));
      start = i + 1;
    }
  }
  std::string last(absl::StripAsciiWhitespace(text.substr(start)));
  if (!last.empty() || !parts.empty()) parts.push_back(std::move(last));
  return parts;
}

std::string CollapseWhitespace(absl::string_view text) {
  std::string out;
  bool space = false;
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = !out.empty();
    } else {
      if (space) out.push_back(' ');
      out.push_back(c);
      space = false;
    }
  }
  return out;
}

SourceParam SplitParam(absl::string_view declaration) {
  static const std::set<std::string, std::less<>> kTypeKeywords = {
      "int",  "float", "double",   "char",     "short",  "long",         "bool",      "void",
      "auto", "const", "volatile", "unsigned", "signed", "__restrict__", "__restrict"};
  static const std::set<std::string, std::less<>> kQualifiers = {
      "const", "volatile", "__restrict__", "__restrict", "struct", "class", "enum", "typename"};
  // Drop a default argument.
  int depth = 0;
  for (size_t i = 0; i < declaration.size(); ++i) {
    const char c = declaration[i];
    if (c == '(' || c == '<' || c == '[') ++depth;
    if (c == ')' || c == '>' || c == ']') --depth;
    if (c == '=' && depth == 0) {
      declaration = absl::StripAsciiWhitespace(declaration.substr(0, i));
      break;
    }
  }
  std::string text = CollapseWhitespace(declaration);
  SourceParam param;
  // An array parameter: "float a[16]".
  std::string suffix;
  if (!text.empty() && text.back() == ']') {
    const size_t open = text.find('[');
    suffix = text.substr(open);
    text = std::string(absl::StripTrailingAsciiWhitespace(text.substr(0, open)));
  }
  size_t end = text.size();
  size_t begin = end;
  while (begin > 0 && IsIdentChar(text[begin - 1])) --begin;
  const std::string last = text.substr(begin, end - begin);
  const std::string rest(absl::StripTrailingAsciiWhitespace(text.substr(0, begin)));
  bool rest_has_type = rest.find_first_of("*&>") != std::string::npos;
  for (absl::string_view token : absl::StrSplit(rest, ' ', absl::SkipEmpty())) {
    if (!kQualifiers.count(token)) rest_has_type = true;
  }
  const bool is_name = !last.empty() && !std::isdigit(static_cast<unsigned char>(last[0])) &&
                       !kTypeKeywords.count(last) && rest_has_type && !absl::EndsWith(rest, "::");
  if (is_name) {
    param.name = last;
    param.type = rest + suffix;
  } else {
    param.type = text + suffix;
  }
  return param;
}

bool TypeIsPointer(absl::string_view type) {
  // "float const*", "const float* __restrict__", "T*": a '*' outside <...>.
  int depth = 0;
  for (char c : type) {
    if (c == '<') ++depth;
    if (c == '>') --depth;
    if (c == '*' && depth == 0) return true;
  }
  return false;
}

}  // namespace

// ------------------------------------------------------------------ ptxas

std::map<std::string, PtxasUsage> ParsePtxasInfo(std::string_view log_in) {
  const absl::string_view log(log_in.data(), log_in.size());
  static const std::regex kCompiling(R"(Compiling entry function '([^']+)')");
  static const std::regex kProperties(R"(Function properties for (\S+))");
  static const std::regex kUsed(R"(Used (\d+) registers)");
  static const std::regex kSmem(R"((\d+) bytes smem)");
  static const std::regex kCmem0(R"((\d+) bytes cmem\[0\])");
  static const std::regex kStack(
      R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  std::map<std::string, PtxasUsage> usage;
  std::string entry;       // the entry being compiled
  std::string properties;  // the function "Function properties" names
  for (absl::string_view view : absl::StrSplit(log, '\n')) {
    if (!absl::StartsWith(view, "ptxas")) continue;
    const std::string line(view);
    std::smatch m;
    if (std::regex_search(line, m, kCompiling)) {
      entry = m[1].str();
      usage[entry];
    } else if (std::regex_search(line, m, kProperties)) {
      properties = m[1].str();
    } else if (std::regex_search(line, m, kStack)) {
      // Only entries' own frames (device functions get their own lines).
      if (auto it = usage.find(properties); it != usage.end()) {
        it->second.stack_frame_bytes = ToU32(m[1].str());
        it->second.spill_store_bytes = ToU32(m[2].str());
        it->second.spill_load_bytes = ToU32(m[3].str());
      }
    } else if (std::regex_search(line, m, kUsed) && !entry.empty()) {
      PtxasUsage& u = usage[entry];
      u.registers = ToU32(m[1].str());
      if (std::regex_search(line, m, kSmem)) u.shared_bytes = ToU32(m[1].str());
      if (std::regex_search(line, m, kCmem0)) u.constant0_bytes = ToU32(m[1].str());
    }
  }
  return usage;
}

// ------------------------------------------------------------------ CUBIN

absl::StatusOr<std::map<std::string, CubinKernel>> ParseCubin(std::string_view cubin_in) {
  const absl::string_view cubin(cubin_in.data(), cubin_in.size());
  const ByteReader elf(cubin);
  if (cubin.size() < 64 ||
      cubin.substr(0, 4) !=
          "\x7f"
          "ELF" ||
      cubin[4] != 2 || cubin[5] != 1) {
    return absl::DataLossError("CUBIN is not a little-endian 64-bit ELF file");
  }
  const auto section_offset = elf.Read<uint64_t>(0x28);
  const auto section_entry_size = elf.Read<uint16_t>(0x3a);
  const auto section_count = elf.Read<uint16_t>(0x3c);
  const auto names_index = elf.Read<uint16_t>(0x3e);
  if (section_entry_size < 64 || names_index >= section_count ||
      !elf.Has(section_offset, uint64_t{section_entry_size} * section_count)) {
    return absl::DataLossError("CUBIN section table out of bounds");
  }
  std::vector<Section> sections(section_count);
  std::vector<uint32_t> name_offsets(section_count);
  for (uint16_t i = 0; i < section_count; ++i) {
    const uint64_t at = section_offset + uint64_t{i} * section_entry_size;
    name_offsets[i] = elf.Read<uint32_t>(at);
    sections[i].type = elf.Read<uint32_t>(at + 4);
    sections[i].offset = elf.Read<uint64_t>(at + 24);
    sections[i].size = elf.Read<uint64_t>(at + 32);
    sections[i].link = elf.Read<uint32_t>(at + 40);
  }
  const Section& names = sections[names_index];
  for (uint16_t i = 0; i < section_count; ++i) {
    sections[i].name = elf.CString(names.offset + name_offsets[i], names.offset + names.size);
  }
  auto contents = [&](const Section& s) {
    return s.type == kSectionNoBits ? absl::string_view() : elf.Slice(s.offset, s.size);
  };

  // Symbol names, for the global .nv.info's per-symbol attributes.
  std::vector<std::string> symbols;
  for (const Section& s : sections) {
    if (s.type != kSectionSymtab || s.link >= sections.size()) continue;
    const Section& strings = sections[s.link];
    for (uint64_t at = 0; at + 24 <= s.size; at += 24) {
      const auto name = elf.Read<uint32_t>(s.offset + at);
      symbols.push_back(elf.CString(strings.offset + name, strings.offset + strings.size));
    }
  }

  std::map<std::string, CubinKernel> kernels;
  for (const Section& s : sections) {
    if (absl::StartsWith(s.name, ".nv.info.")) {
      CubinKernel& kernel = kernels[s.name.substr(9)];
      for (const Attribute& a : ReadAttributes(contents(s))) {
        const ByteReader value(a.value);
        if (a.id == kAttrMaxThreads && a.value.size() >= 12) {
          kernel.max_threads =
              value.Read<uint32_t>(0) * value.Read<uint32_t>(4) * value.Read<uint32_t>(8);
        } else if (a.id == kAttrKparamInfo && a.value.size() >= 12) {
          // u32 index, u16 ordinal, u16 offset, u32 flags: size in bytes in
          // bits 18..31 (bits 12..17: constant bank, 0x1f).
          CubinParam param;
          param.ordinal = value.Read<uint16_t>(4);
          param.offset_bytes = value.Read<uint16_t>(6);
          param.size_bytes = value.Read<uint32_t>(8) >> 18;
          kernel.params.push_back(param);
        }
      }
      std::sort(kernel.params.begin(), kernel.params.end(),
                [](const CubinParam& a, const CubinParam& b) { return a.ordinal < b.ordinal; });
    }
  }
  for (const Section& s : sections) {
    if (s.name == ".nv.info") {
      for (const Attribute& a : ReadAttributes(contents(s))) {
        if ((a.id != kAttrRegCount && a.id != kAttrFrameSize) || a.value.size() < 8) continue;
        const ByteReader value(a.value);
        const uint32_t symbol = value.Read<uint32_t>(0);
        if (symbol >= symbols.size()) continue;
        auto it = kernels.find(symbols[symbol]);
        if (it == kernels.end()) continue;
        (a.id == kAttrRegCount ? it->second.registers : it->second.frame_bytes) =
            value.Read<uint32_t>(4);
      }
    } else if (absl::StartsWith(s.name, ".nv.shared.")) {
      if (auto it = kernels.find(s.name.substr(11)); it != kernels.end()) {
        it->second.shared_section_bytes = static_cast<uint32_t>(s.size);
      }
    } else if (absl::StartsWith(s.name, ".nv.constant0.")) {
      if (auto it = kernels.find(s.name.substr(14)); it != kernels.end()) {
        it->second.constant0_bytes = static_cast<uint32_t>(s.size);
      }
    }
  }
  return kernels;
}

// -------------------------------------------------------------------- PTX

std::vector<PtxEntry> ParsePtxEntries(std::string_view ptx_in) {
  const absl::string_view ptx(ptx_in.data(), ptx_in.size());
  static const std::regex kEntry(R"(\.entry\s+([A-Za-z_$][\w$]*)\s*\()");
  static const std::regex kThreads(
      R"(\.(?:maxntid|reqntid)\s+(\d+)(?:\s*,\s*(\d+))?(?:\s*,\s*(\d+))?)");
  std::vector<PtxEntry> entries;
  const std::string text(ptx);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), kEntry);
       it != std::sregex_iterator(); ++it) {
    PtxEntry entry;
    entry.name = (*it)[1].str();
    const size_t params_begin = it->position() + it->length();
    const size_t params_end = text.find(')', params_begin);
    if (params_end == std::string::npos) break;
    uint32_t offset = 0;
    for (absl::string_view declaration :
         absl::StrSplit(absl::string_view(text).substr(params_begin, params_end - params_begin),
                        ',', absl::SkipWhitespace())) {
      PtxParam param;
      uint32_t element_bytes = 0;
      uint32_t count = 1;
      std::string type;
      std::vector<absl::string_view> tokens =
          absl::StrSplit(declaration, absl::ByAnyChar(" \t\r\n"), absl::SkipEmpty());
      for (size_t t = 0; t < tokens.size(); ++t) {
        const absl::string_view token = tokens[t];
        if (token == ".param") continue;
        if (token == ".ptr") {
          param.is_pointer = true;
        } else if (token == ".align" && t + 1 < tokens.size()) {
          param.align_bytes = ToU32(std::string(tokens[++t]));
        } else if (token.size() >= 3 && token[0] == '.' &&
                   (token[1] == 'u' || token[1] == 's' || token[1] == 'b' || token[1] == 'f') &&
                   std::isdigit(static_cast<unsigned char>(token[2]))) {
          type = std::string(token);
          element_bytes = ToU32(std::string(token.substr(2))) / 8;
        } else if (token[0] != '.') {
          // The name, maybe with [N].
          if (const size_t open = token.find('['); open != absl::string_view::npos) {
            count = ToU32(std::string(token.substr(open + 1, token.find(']') - open - 1)));
          }
        }
      }
      if (element_bytes == 0) continue;
      param.size_bytes = element_bytes * count;
      param.ptx_type = count > 1 || absl::StrContains(declaration, "[")
                           ? absl::StrCat(type, "[", count, "]")
                           : type;
      if (param.align_bytes == 0) param.align_bytes = element_bytes;
      offset = (offset + param.align_bytes - 1) / param.align_bytes * param.align_bytes;
      param.offset_bytes = offset;
      offset += param.size_bytes;
      entry.params.push_back(std::move(param));
    }
    // Performance directives sit between ")" and "{".
    const size_t body = text.find('{', params_end);
    const std::string directives =
        text.substr(params_end, body == std::string::npos ? std::string::npos : body - params_end);
    std::smatch m;
    if (std::regex_search(directives, m, kThreads)) {
      entry.max_threads = ToU32(m[1].str()) * (m[2].matched ? ToU32(m[2].str()) : 1) *
                          (m[3].matched ? ToU32(m[3].str()) : 1);
    }
    entries.push_back(std::move(entry));
  }
  return entries;
}

// ------------------------------------------------------------------ names

std::string Demangle(const std::string& mangled) {
  if (!absl::StartsWith(mangled, "_Z")) return mangled;
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> demangled(
      abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), &std::free);
  return status == 0 && demangled ? std::string(demangled.get()) : mangled;
}

std::vector<std::string> DemangledParameterTypes(std::string_view demangled_in) {
  const absl::string_view demangled(demangled_in.data(), demangled_in.size());
  // The parameter list is the last top-level "(...)".
  if (demangled.empty() || demangled.back() != ')') return {};
  int depth = 0;
  size_t open = absl::string_view::npos;
  for (size_t i = demangled.size(); i-- > 0;) {
    if (demangled[i] == ')') ++depth;
    if (demangled[i] == '(' && --depth == 0) {
      open = i;
      break;
    }
  }
  if (open == absl::string_view::npos) return {};
  const absl::string_view inside = demangled.substr(open + 1, demangled.size() - open - 2);
  if (inside.empty() || inside == "void") return {};
  return SplitTopLevel(inside);
}

std::vector<std::vector<SourceParam>> SourceKernelParameters(std::string_view source_in,
                                                             std::string_view name_in) {
  const absl::string_view source(source_in.data(), source_in.size());
  const absl::string_view name(name_in.data(), name_in.size());
  std::vector<std::vector<SourceParam>> found;
  if (name.empty()) return found;
  const std::string text = StripCommentsAndLiterals(source);
  size_t at = 0;
  while ((at = text.find("__global__", at)) != std::string::npos) {
    at += 10;
    // Walk to the first "identifier (" at depth 0, skipping attribute-like
    // calls (__launch_bounds__(...), __attribute__((...)), alignas(...)).
    size_t i = at;
    while (i < text.size() && text[i] != ';' && text[i] != '{') {
      if (!IsIdentChar(text[i])) {
        ++i;
        continue;
      }
      const size_t word_begin = i;
      while (i < text.size() && IsIdentChar(text[i])) ++i;
      const absl::string_view word(text.data() + word_begin, i - word_begin);
      size_t j = i;
      while (j < text.size() && std::isspace(static_cast<unsigned char>(text[j]))) ++j;
      if (j >= text.size() || text[j] != '(') continue;
      // Balanced "(...)".
      int depth = 0;
      size_t close = j;
      for (; close < text.size(); ++close) {
        if (text[close] == '(') ++depth;
        if (text[close] == ')' && --depth == 0) break;
      }
      if (close >= text.size()) return found;
      if (word == name) {
        std::vector<SourceParam> params;
        const absl::string_view inside(text.data() + j + 1, close - j - 1);
        if (!(absl::StripAsciiWhitespace(inside).empty() ||
              absl::StripAsciiWhitespace(inside) == "void")) {
          for (const std::string& part : SplitTopLevel(inside)) params.push_back(SplitParam(part));
        }
        found.push_back(std::move(params));
        break;
      }
      if (word == "__launch_bounds__" || word == "__attribute__" || word == "alignas" ||
          word == "__declspec" || word == "__maxnreg__" || word == "__cluster_dims__") {
        i = close + 1;
        continue;
      }
      break;  // another function's name: not this kernel
    }
  }
  return found;
}

namespace {

// A line-leading `.extern` declaration of the PTX: a function's, or a
// variable's in the global, constant or local state space (`.extern
// .shared`, dynamic shared memory, is none).
struct PtxExtern {
  std::string name;
  bool function = false;
};
std::vector<PtxExtern> PtxExterns(std::string_view ptx) {
  static const std::regex kExtern(
      R"((?:^|\n)[ \t]*\.extern[ \t]+(?:\.func[ \t]*(?:\([^)]*\))?[ \t]*([A-Za-z_$%][\w$]*))"
      R"(|\.(?:global|const|local)\b[^;\n]*?([A-Za-z_$%][\w$]*)[ \t]*(?:\[[^\]]*\])?[ \t]*;))");
  std::vector<PtxExtern> externs;
  for (auto it =
           std::regex_iterator<std::string_view::const_iterator>(ptx.begin(), ptx.end(), kExtern);
       it != std::regex_iterator<std::string_view::const_iterator>(); ++it) {
    const bool function = (*it)[1].matched;
    externs.push_back({.name = (function ? (*it)[1] : (*it)[2]).str(), .function = function});
  }
  return externs;
}

}  // namespace

bool PtxCallsDeviceMalloc(std::string_view ptx) {
  // malloc and operator new call `malloc`; __nv_aligned_device_malloc calls
  // `__cuda_syscall_aligned_malloc`; device-side cudaMalloc (dynamic
  // parallelism, refused today) would call `cudaMalloc`.
  static constexpr std::string_view kMallocs[] = {"malloc", "__cuda_syscall_aligned_malloc",
                                                  "cudaMalloc"};
  const std::vector<PtxExtern> externs = PtxExterns(ptx);
  return std::any_of(externs.begin(), externs.end(), [](const PtxExtern& e) {
    return e.function &&
           std::find(std::begin(kMallocs), std::end(kMallocs), e.name) != std::end(kMallocs);
  });
}

std::vector<std::string> PtxUnresolvedExterns(std::string_view ptx) {
  static constexpr std::string_view kCudasOwn[] = {"vprintf", "malloc", "free", "__assertfail",
                                                   "__cuda_syscall_aligned_malloc"};
  std::vector<std::string> names;
  for (PtxExtern& e : PtxExterns(ptx)) {
    if (std::find(std::begin(kCudasOwn), std::end(kCudasOwn), e.name) == std::end(kCudasOwn)) {
      names.push_back(std::move(e.name));
    }
  }
  return names;
}

std::vector<std::string> PtxDeviceGlobals(std::string_view ptx) {
  // At the start of a line: function bodies address global memory through
  // instructions (ld.global, cvta.to.global), never a line-leading directive.
  // Texture, sampler and surface references are handles, not memory; names
  // starting with '$' are the compiler's own (printf's format strings,
  // $str), which the driver need not look up by name.
  static const std::regex kGlobal(
      R"((?:^|\n)[ \t]*(?:\.(?:visible|weak|common)[ \t]+)?\.global[ \t]+)"
      R"((?:\.attribute\([^)]*\)[ \t]+)?(?:\.align[ \t]+\d+[ \t]+)?(?:\.v\d[ \t]+)?)"
      R"(\.(?!texref|samplerref|surfref)\w+[ \t]+([A-Za-z_%][\w$]*))");
  std::vector<std::string> names;
  for (auto it =
           std::regex_iterator<std::string_view::const_iterator>(ptx.begin(), ptx.end(), kGlobal);
       it != std::regex_iterator<std::string_view::const_iterator>(); ++it) {
    names.push_back((*it)[1].str());
  }
  return names;
}

bool IsPreludeGlobal(std::string_view name) {
  static constexpr std::string_view kNames[] = {
      "INFINITY",    "NAN",          "HUGE_VALF", "HUGE_VAL", "FLT_MAX",     "FLT_MIN",
      "FLT_EPSILON", "FLT_TRUE_MIN", "DBL_MAX",   "DBL_MIN",  "DBL_EPSILON", "DBL_TRUE_MIN"};
  return std::find(std::begin(kNames), std::end(kNames), name) != std::end(kNames);
}

// ----------------------------------------------------------------- together

std::vector<v1::KernelInfo> ExtractKernels(std::string_view ptx_in, std::string_view cubin_in,
                                           std::string_view raw_log_in,
                                           std::string_view source_in) {
  const absl::string_view ptx(ptx_in.data(), ptx_in.size());
  const absl::string_view cubin(cubin_in.data(), cubin_in.size());
  const absl::string_view raw_log(raw_log_in.data(), raw_log_in.size());
  const absl::string_view source(source_in.data(), source_in.size());
  const std::map<std::string, PtxasUsage> ptxas = ParsePtxasInfo(raw_log_in);
  std::map<std::string, CubinKernel> elf;
  if (!cubin.empty()) {
    if (absl::StatusOr<std::map<std::string, CubinKernel>> parsed = ParseCubin(cubin_in);
        parsed.ok()) {
      elf = *std::move(parsed);
    }
  }
  std::vector<v1::KernelInfo> kernels;
  for (const PtxEntry& entry : ParsePtxEntries(ptx_in)) {
    v1::KernelInfo& info = kernels.emplace_back();
    info.set_mangled_name(entry.name);
    const std::string demangled = Demangle(entry.name);
    info.set_name(demangled);
    info.set_max_threads_per_block(entry.max_threads);

    const auto usage = ptxas.find(entry.name);
    const auto binary = elf.find(entry.name);
    const CubinKernel* k = binary != elf.end() ? &binary->second : nullptr;
    if (usage != ptxas.end()) {
      const PtxasUsage& u = usage->second;
      info.set_registers_per_thread(u.registers);
      info.set_static_shared_bytes(u.shared_bytes);
      info.set_local_bytes(u.stack_frame_bytes);
      info.set_spill_store_bytes(u.spill_store_bytes);
      info.set_spill_load_bytes(u.spill_load_bytes);
      info.set_constant_bytes(u.constant0_bytes);
    } else if (k != nullptr) {
      info.set_registers_per_thread(k->registers.value_or(0));
      info.set_local_bytes(k->frame_bytes.value_or(0));
      // sm_80 and newer reserve 1 KiB of each block's shared memory for the
      // system; the section includes it, the declaration does not.
      info.set_static_shared_bytes(k->shared_section_bytes >= 1024 ? k->shared_section_bytes - 1024
                                                                   : k->shared_section_bytes);
    }
    if (k != nullptr) {
      if (info.constant_bytes() == 0) info.set_constant_bytes(k->constant0_bytes);
      if (info.registers_per_thread() == 0 && k->registers)
        info.set_registers_per_thread(*k->registers);
      if (info.max_threads_per_block() == 0) info.set_max_threads_per_block(k->max_threads);
    }

    // Parameters: layout from the CUBIN (else PTX), types from the demangled
    // name (else the source, else PTX), names from the source.
    const std::vector<std::string> demangled_types = DemangledParameterTypes(demangled);
    std::string base_name = demangled.substr(0, demangled.find('('));
    if (const size_t lt = base_name.find('<'); lt != std::string::npos) base_name.resize(lt);
    if (const size_t colons = base_name.rfind("::"); colons != std::string::npos) {
      base_name = base_name.substr(colons + 2);
    }
    if (const size_t space = base_name.rfind(' '); space != std::string::npos) {
      base_name = base_name.substr(space + 1);  // "void f" in some demanglings
    }
    const bool is_template = demangled.find('<') < demangled.find('(');
    const size_t count =
        k != nullptr && !k->params.empty() ? k->params.size() : entry.params.size();
    const std::vector<SourceParam>* declared = nullptr;
    std::vector<std::vector<SourceParam>> candidates = SourceKernelParameters(source_in, base_name);
    for (const auto& candidate : candidates) {
      if (candidate.size() != count) continue;
      // With overloads, prefer the declaration whose types match.
      bool types_match = demangled_types.size() == count;
      for (size_t i = 0; types_match && i < count; ++i) {
        types_match = TypeIsPointer(candidate[i].type) == TypeIsPointer(demangled_types[i]);
      }
      if (declared == nullptr || types_match) declared = &candidate;
      if (types_match) break;
    }
    for (size_t i = 0; i < count; ++i) {
      v1::KernelParam& param = *info.add_params();
      if (k != nullptr && i < k->params.size()) {
        param.set_size_bytes(k->params[i].size_bytes);
        param.set_offset_bytes(k->params[i].offset_bytes);
      } else if (i < entry.params.size()) {
        param.set_size_bytes(entry.params[i].size_bytes);
        param.set_offset_bytes(entry.params[i].offset_bytes);
      }
      std::string type;
      if (declared != nullptr && !is_template) type = (*declared)[i].type;
      if (type.empty() && i < demangled_types.size()) type = demangled_types[i];
      if (type.empty() && declared != nullptr) type = (*declared)[i].type;
      if (type.empty() && i < entry.params.size()) type = entry.params[i].ptx_type;
      param.set_type(type);
      if (declared != nullptr) param.set_name((*declared)[i].name);
      bool pointer = i < entry.params.size() && entry.params[i].is_pointer;
      if (i < demangled_types.size()) pointer = pointer || TypeIsPointer(demangled_types[i]);
      if (declared != nullptr) pointer = pointer || TypeIsPointer((*declared)[i].type);
      param.set_is_pointer(pointer);
    }
  }
  return kernels;
}

}  // namespace kerneleval::compile
