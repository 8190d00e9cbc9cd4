#include "evaluator/cpu/source_rewrite.h"

#include <algorithm>
#include <cctype>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "evaluator/plan/name_expression.h"

namespace kerneleval::cpu {
namespace {

// A translation unit's first line (BuildTranslationUnit): nothing may come
// before it, or g++ does not use the precompiled prelude.
constexpr absl::string_view kPreludeInclude = "#include \"kerneleval_cpu_prelude.h\"\n";

bool IsIdentifierChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$';
}

// A macro name: an identifier without '$'.
bool IsMacroName(std::string_view name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name.front()))) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

// Where the white space that ends at `end` of `text` begins.
size_t SkipSpaceBackward(std::string_view text, size_t end) {
  while (end > 0 && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
  return end;
}

// Positions of `word` in `masked` as a whole token.
std::vector<size_t> FindToken(std::string_view masked, std::string_view word) {
  std::vector<size_t> found;
  for (size_t pos = masked.find(word); pos != std::string_view::npos;
       pos = masked.find(word, pos + 1)) {
    const bool left_ok = pos == 0 || !IsIdentifierChar(masked[pos - 1]);
    const size_t end = pos + word.size();
    const bool right_ok = end >= masked.size() || !IsIdentifierChar(masked[end]);
    if (left_ok && right_ok) found.push_back(pos);
  }
  return found;
}

int LineOf(std::string_view text, size_t pos) {
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + pos, '\n'));
}

// The first line of the directive-free code before `pos` that can start a
// declaration: after the previous ';', '{' or '}', or after a preprocessor
// line.
size_t StatementStart(std::string_view masked, size_t pos) {
  for (size_t i = pos; i > 0; --i) {
    const char c = masked[i - 1];
    if (c == ';' || c == '{' || c == '}') return i;
    if (c == '\n' && i >= 2) {
      // The line that ends at i - 1: a directive ends the search.
      const size_t line_end = i - 1;
      const size_t previous_newline = masked.rfind('\n', line_end - 1);
      const size_t line_start =
          previous_newline == std::string_view::npos ? 0 : previous_newline + 1;
      const size_t first = masked.find_first_not_of(" \t", line_start);
      if (first < line_end && masked[first] == '#') return i;
    }
  }
  return 0;
}

// One #include directive of the source: where its line starts and the
// header it names, without the <> or "".
struct IncludeLine {
  size_t begin = 0;  // the '#'
  size_t end = 0;    // the end of the line (its '\n' or the source's end)
  std::string_view header;
};

// The #include directives of `source`, in order. `masked` is
// MaskCommentsAndLiterals(source): a directive inside a comment is not one,
// and a "quoted" header name is read from the source at the masked blanks.
std::vector<IncludeLine> FindIncludes(std::string_view source, std::string_view masked) {
  std::vector<IncludeLine> includes;
  for (const source::Directive& directive : source::FindDirectives(source, masked)) {
    if (directive.name != "include") continue;
    const size_t k = source.find_first_not_of(" \t", directive.after_name);
    if (k >= directive.end || (source[k] != '<' && source[k] != '"')) continue;
    const size_t stop = source.find(source[k] == '<' ? '>' : '"', k + 1);
    if (stop < directive.end) {
      includes.push_back({directive.hash, directive.end, source.substr(k + 1, stop - k - 1)});
    }
  }
  return includes;
}

// CUB's block- and warp-wide collectives, which kerneleval_cpu_cub.h
// emulates (the real ones are warp-synchronous PTX).
constexpr std::string_view kEmulatedCubHeaders[] = {
    "cub/cub.cuh",
    "cub/block/block_reduce.cuh",
    "cub/block/block_scan.cuh",
    "cub/block/block_load.cuh",
    "cub/block/block_store.cuh",
    "cub/block/block_exchange.cuh",
    "cub/block/block_radix_sort.cuh",
    "cub/warp/warp_reduce.cuh",
    "cub/warp/warp_scan.cuh",
    "cub/util_type.cuh",
    "cub/util_ptx.cuh",
    "cub/thread/thread_reduce.cuh",
    "cub/thread/thread_load.cuh",
    "cub/thread/thread_store.cuh",
    "cub/thread/thread_operators.cuh",
    "cub/iterator/cache_modified_input_iterator.cuh",
};

// libcu++ headers whose host code is the device code's meaning (types,
// limits, math, functional objects, atomics as std::atomic_ref): g++ compiles
// them as they are. Not these: synchronisation whose host code blocks the OS
// thread every thread of a block shares (barrier, latch, semaphore, pipeline),
// device-only PTX wrappers, memory resources and streams, clocks.
constexpr std::string_view kHostCompatibleLibcudacxx[] = {
    "cuda/atomic",
    "cuda/bit",
    "cuda/cmath",
    "cuda/functional",
    "cuda/numeric",
    "cuda/type_traits",
    "cuda/version",
    "cuda/std/array",
    "cuda/std/atomic",
    "cuda/std/bit",
    "cuda/std/bitset",
    "cuda/std/cassert",
    "cuda/std/cfloat",
    "cuda/std/climits",
    "cuda/std/cmath",
    "cuda/std/complex",
    "cuda/std/concepts",
    "cuda/std/cstddef",
    "cuda/std/cstdint",
    "cuda/std/cstdlib",
    "cuda/std/cstring",
    "cuda/std/expected",
    "cuda/std/functional",
    "cuda/std/initializer_list",
    "cuda/std/inplace_vector",
    "cuda/std/iterator",
    "cuda/std/limits",
    "cuda/std/mdspan",
    "cuda/std/numbers",
    "cuda/std/numeric",
    "cuda/std/optional",
    "cuda/std/ratio",
    "cuda/std/span",
    "cuda/std/tuple",
    "cuda/std/type_traits",
    "cuda/std/utility",
    "cuda/std/variant",
    "cuda/std/version",
};

template <size_t N>
bool Contains(const std::string_view (&list)[N], std::string_view header) {
  return std::find(std::begin(list), std::end(list), header) != std::end(list);
}

bool IsCubHeader(std::string_view header) { return header.substr(0, 4) == "cub/"; }

// Why the CPU backend cannot compile `header`, as the feature it names, or
// nullopt when it can.
std::optional<std::string> RefusedHeader(std::string_view header) {
  const std::string named = absl::StrCat("<", std::string(header), ">");
  if (IsCubHeader(header)) {
    if (Contains(kEmulatedCubHeaders, header)) return std::nullopt;
    return absl::StrCat(named,
                        ": of CUB only the block and warp collectives and the thread "
                        "utilities are supported (<cub/block/block_reduce.cuh>, block_scan, "
                        "block_load, block_store, block_exchange, block_radix_sort, "
                        "<cub/warp/warp_reduce.cuh>, warp_scan, <cub/thread/thread_reduce.cuh>, "
                        "thread_load, thread_store, thread_operators, util_type, util_ptx)");
  }
  for (std::string_view library : {"thrust/", "cutlass/", "cute/"}) {
    if (header.substr(0, library.size()) == library) {
      return absl::StrCat(named, ": Thrust and CUTLASS headers");
    }
  }
  if (header.substr(0, 5) == "cuda/" || header.substr(0, 3) == "nv/") {
    if (Contains(kHostCompatibleLibcudacxx, header)) return std::nullopt;
    return absl::StrCat(named,
                        ": of libcu++ only the headers of types, limits, math, functional "
                        "objects and atomics are supported (<cuda/std/limits>, "
                        "<cuda/std/cmath>, <cuda/functional>, <cuda/atomic>, ...); "
                        "asynchronous copies to shared memory are: "
                        "cooperative_groups::memcpy_async with cooperative_groups::wait (a "
                        "plain byte count in place of cuda::aligned_size_t), or "
                        "__pipeline_memcpy_async");
  }
  return std::nullopt;
}

}  // namespace

// What inline PTX is written for has an intrinsic the emulation has
// (sweep 4: ld.global.nc, %laneid and cp.async, each refused without a way on).
constexpr std::string_view kInlineAssembly =
    "inline PTX assembly (asm); the CUDA intrinsics do what it is usually written for: __ldg "
    "(ld.global.nc), __pipeline_memcpy_async or cooperative_groups::memcpy_async (cp.async), "
    "threadIdx.x % 32 (%laneid), __fmaf_rn (fma.rn), __shfl_*_sync (shfl.sync)";

namespace {

// The first construct of `source` (`masked`: MaskCommentsAndLiterals) that
// could tell NVRTC's build from the host build outside the directives whose
// branches are checked against NVRTC's (BuildTranslationUnit): where it is
// and what it is. Each of these passed sweep 8 as a gate (right code in the
// host build, zeros under NVRTC).
std::optional<std::pair<size_t, std::string>> FindBuildGate(std::string_view source,
                                                            std::string_view masked) {
  std::optional<std::pair<size_t, std::string>> first;
  auto found = [&](size_t at, std::string what) {
    if (!first.has_value() || at < first->first) first = std::pair{at, std::move(what)};
  };
  // Line splices: a name, a directive or a digraph split over two lines is
  // whole to the compilers and not to these scans. Allowed only in the
  // lines of a #define, after a blank or a bracket, brace, ';' or ','.
  const std::vector<source::Directive> directives = source::FindDirectives(source, masked);
  size_t next_directive = 0;
  for (size_t at = source.find('\n'); at != std::string_view::npos;
       at = source.find('\n', at + 1)) {
    size_t backslash = at;
    if (backslash > 0 && source[backslash - 1] == '\r') --backslash;
    if (backslash == 0 || source[backslash - 1] != '\\') continue;
    --backslash;
    while (next_directive < directives.size() && directives[next_directive].end < at) {
      ++next_directive;
    }
    const bool in_define = next_directive < directives.size() &&
                           directives[next_directive].begin <= backslash &&
                           directives[next_directive].name == "define";
    const char before = backslash > 0 ? source[backslash - 1] : '\n';
    if (!in_define || std::string_view(" \t\n{}();,").find(before) == std::string_view::npos) {
      found(backslash,
            "line splices (a backslash ending a line) outside a #define, or right after a name, "
            "number or operator");
      break;
    }
  }
  for (const source::Directive& directive : directives) {
    if (directive.name != "define") continue;
    // The # operator: a macro only one build defines, stringified, is a
    // string both compile (`#__x86_64__`, `#__COUNTER__`).
    size_t k = masked.find_first_not_of(" \t", directive.after_name);
    while (k < directive.end && IsIdentifierChar(masked[k])) ++k;
    if (k >= directive.end || masked[k] != '(') continue;  // object-like
    const size_t close = masked.find(')', k);
    for (size_t i = close + 1; close < directive.end && i < directive.end; ++i) {
      if (masked[i] != '#') continue;
      if (i + 1 < directive.end && masked[i + 1] == '#') {
        ++i;  // ## pastes; a pasted name NVRTC lacks fails there
        continue;
      }
      found(i, "the # operator (stringizing) in macros");
      break;
    }
  }
  // Pragmas and attributes for g++ alone: `#pragma GCC optimize("finite-math-only")`
  // folded a NaN test to true in the host build only.
  auto host_compiler_pragma = [](std::string_view text, size_t k) {
    return text.compare(k, 3, "GCC") == 0 || text.compare(k, 5, "clang") == 0;
  };
  constexpr const char* kHostPragma = "#pragma GCC and #pragma clang (the host compiler's alone)";
  for (const source::Directive& directive : directives) {
    if (directive.name != "pragma") continue;
    const size_t k = masked.find_first_not_of(" \t", directive.after_name);
    if (k < directive.end && host_compiler_pragma(masked, k)) found(k, kHostPragma);
  }
  for (size_t at = masked.find("_Pragma"); at != std::string_view::npos;
       at = masked.find("_Pragma", at + 1)) {
    const size_t quote = source.find('"', at);
    if (quote == std::string_view::npos) break;
    const size_t k = source.find_first_not_of(" \t", quote + 1);
    if (k != std::string_view::npos && host_compiler_pragma(source, k)) found(at, kHostPragma);
  }
  for (std::string_view word : {"optimize", "__optimize__"}) {
    if (const std::vector<size_t> at = FindToken(masked, word); !at.empty()) {
      found(at.front(), "the optimize attribute (the host compiler's alone)");
    }
  }
  // It exempts a local from the pattern every local starts with in the
  // host build (BuildTranslationUnit), which keeps a fiber's stack from
  // handing one GPU thread's data to the next.
  for (std::string_view word : {"uninitialized", "__uninitialized__"}) {
    if (const std::vector<size_t> at = FindToken(masked, word); !at.empty()) {
      found(at.front(), "the uninitialized attribute (the host compiler's alone)");
    }
  }
  // push_macro/pop_macro, as #pragma or _Pragma: they reach the host build's
  // saved NVRTC macros.
  for (std::string_view word : {"push_macro", "pop_macro"}) {
    if (const size_t at = source.find(word); at != std::string_view::npos) {
      found(at, "#pragma push_macro and pop_macro");
    }
  }
  // Names reserved to the implementation (_CCCL_COMPILER, _NV_TARGET_*,
  // _GLIBCXX_*): in code, the headers' configuration for each build.
  // Conditional directives are checked against NVRTC's anyway; a #define's
  // own name may be one (an include guard).
  std::vector<std::pair<size_t, size_t>> allowed;  // [begin, end) where they may appear
  for (const source::Directive& directive : directives) {
    if (directive.name == "define") {
      size_t k = masked.find_first_not_of(" \t", directive.after_name);
      while (k < directive.end && IsIdentifierChar(masked[k])) ++k;
      allowed.emplace_back(directive.begin, k);
    } else {
      allowed.emplace_back(directive.begin, directive.end);
    }
  }
  size_t region = 0;
  for (size_t i = 0; i + 1 < masked.size(); ++i) {
    if (masked[i] != '_' || !std::isupper(static_cast<unsigned char>(masked[i + 1])) ||
        (i > 0 && IsIdentifierChar(masked[i - 1]))) {
      continue;
    }
    while (region < allowed.size() && allowed[region].second <= i) ++region;
    const bool in_allowed = region < allowed.size() && allowed[region].first <= i;
    size_t end = i;
    while (end < masked.size() && IsIdentifierChar(masked[end])) ++end;
    const std::string name(masked.substr(i, end - i));
    if (!in_allowed && name != "_Pragma") {
      found(i, absl::StrCat("names reserved to the implementation (", name,
                            ": _ and a capital letter) outside #if and #ifdef"));
      break;
    }
    i = end;
  }
  return first;
}

}  // namespace

std::optional<std::string> FindUnsupportedFeature(std::string_view source) {
  const std::string masked = MaskCommentsAndLiterals(source);
  struct Rule {
    std::string_view token;
    std::string_view feature;
  };
  static constexpr Rule kRules[] = {
      {"asm", kInlineAssembly},
      {"__asm__", kInlineAssembly},
      {"__asm", kInlineAssembly},
      {"this_grid", "grid-wide cooperative groups (grid synchronisation)"},
      {"grid_group", "grid-wide cooperative groups (grid synchronisation)"},
      {"this_multi_grid", "grid-wide cooperative groups (grid synchronisation)"},
      {"this_cluster", "thread block clusters"},
      {"cluster_group", "thread block clusters"},
      // A GPU refuses a launch whose grid is no multiple of the cluster the
      // kernel declares; the CPU backend ignored it (sweep 38, r19).
      {"__cluster_dims__", "thread block clusters"},
      {"cluster_dims", "thread block clusters"},
      {"cudaDeviceSynchronize", "dynamic parallelism (kernel launches from device code)"},
      {"cudaLaunchDevice", "dynamic parallelism (kernel launches from device code)"},
      {"cudaGetParameterBuffer", "dynamic parallelism (kernel launches from device code)"},
      {"tex1Dfetch", "texture and surface objects"},
      {"tex1D", "texture and surface objects"},
      {"tex2D", "texture and surface objects"},
      {"tex3D", "texture and surface objects"},
      {"cudaTextureObject_t", "texture and surface objects"},
      {"cudaSurfaceObject_t", "texture and surface objects"},
      {"surf2Dwrite", "texture and surface objects"},
      // One flat address space here: no answer to give that a GPU would.
      {"__isShared", "address-space predicates (__isShared, __isGlobal, ...)"},
      {"__isGlobal", "address-space predicates (__isShared, __isGlobal, ...)"},
      {"__isLocal", "address-space predicates (__isShared, __isGlobal, ...)"},
      {"__isConstant", "address-space predicates (__isShared, __isGlobal, ...)"},
      {"__isGridConstant", "address-space predicates (__isShared, __isGlobal, ...)"},
      {"__barrier_sync", "named barriers (__barrier_sync, __barrier_sync_count)"},
      {"__barrier_sync_count", "named barriers (__barrier_sync, __barrier_sync_count)"},
      // Spelled by each compiler its own way ("const float*" against
      // "const float *"): a gate between the builds (sweep 8).
      {"__PRETTY_FUNCTION__", "__PRETTY_FUNCTION__"},
      {"__FUNCSIG__", "__FUNCSIG__"},
      // A constructor's is "FN" here and longer under NVRTC (sweep 9).
      {"__func__", "__func__ and __FUNCTION__"},
      {"__FUNCTION__", "__func__ and __FUNCTION__"},
      // The same through the builtins behind std::source_location: g++'s
      // __builtin_FUNCTION() in a constructor is "Ctor", NVRTC's
      // "Ctor::Ctor" (sweep 38, r07).
      {"__builtin_FUNCTION", "the source-location builtins (__builtin_FUNCTION, ...)"},
      {"__builtin_FILE", "the source-location builtins (__builtin_FUNCTION, ...)"},
      {"__builtin_LINE", "the source-location builtins (__builtin_FUNCTION, ...)"},
      {"__builtin_COLUMN", "the source-location builtins (__builtin_FUNCTION, ...)"},
      {"__builtin_source_location", "the source-location builtins (__builtin_FUNCTION, ...)"},
  };
  size_t best_pos = std::string::npos;
  std::string best_feature;
  // NVRTC's diagnostic pragmas, in the source as written (a _Pragma's
  // string too): the CPU backend refuses code NVRTC warns about where the
  // host build would compute other numbers ("'long double' is treated as
  // 'double'", sweep 38, s38a), which `#pragma nv_diag_suppress 20208`
  // would silence.
  for (const std::string_view name : {"diag_suppress", "diag_warning", "diag_default", "diag_once",
                                      "diag_remark", "nv_diagnostic"}) {
    const size_t pos = source.find(name);
    if (pos != std::string_view::npos && pos < best_pos) {
      best_pos = pos;
      best_feature =
          "NVRTC's diagnostic pragmas (nv_diag_suppress, ...): its warnings tell the CPU "
          "backend where its host build would compute otherwise";
    }
  }
  for (const Rule& rule : kRules) {
    const std::vector<size_t> hits = FindToken(masked, rule.token);
    if (!hits.empty() && hits.front() < best_pos) {
      best_pos = hits.front();
      best_feature = rule.feature;
    }
  }
  // Kernel launch syntax (a launch from device code; not `operator<<<`).
  for (size_t pos = masked.find("<<<"); pos != std::string::npos;
       pos = masked.find("<<<", pos + 3)) {
    const size_t before = SkipSpaceBackward(masked, pos);
    if (before >= 8 && masked.compare(before - 8, 8, "operator") == 0) continue;
    if (pos < best_pos) {
      best_pos = pos;
      best_feature = "dynamic parallelism (kernel launches from device code)";
    }
    break;
  }
  // What could tell NVRTC's build from this one where the check of the
  // conditional branches against NVRTC's preprocessor does not look (sweep 8).
  if (std::optional<std::pair<size_t, std::string>> gate = FindBuildGate(source, masked);
      gate.has_value() && gate->first < best_pos) {
    best_pos = gate->first;
    best_feature = std::move(gate->second);
  }
  // The digraph `%:` for `#` (and `%:%:` for `##`): its directives are
  // directives to both compilers, which the scans here (and the check of
  // the conditional branches against NVRTC's) look for by their `#`.
  if (const size_t digraph = masked.find("%:"); digraph < best_pos) {
    best_pos = digraph;
    best_feature = "the digraph %: (write #)";
  }
  // The prelude's own names: a submission redefining KERNELEVAL_CPU_TDATA
  // or KERNELEVAL_CPU_BRANCH_<i> would undo what they check (NVRTC has none
  // of them, so only the host build would see the difference).
  for (size_t pos = 0; pos < masked.size(); ++pos) {
    if ((pos > 0 && IsIdentifierChar(masked[pos - 1])) || pos >= best_pos) continue;
    if (absl::StartsWithIgnoreCase(absl::string_view(masked).substr(pos), "kerneleval_cpu")) {
      best_pos = pos;
      best_feature = "names starting with kerneleval_cpu, which are its own";
      break;
    }
  }
  // Libraries: the #include lines of CCCL and CUTLASS headers.
  for (const IncludeLine& include : FindIncludes(source, masked)) {
    if (include.begin >= best_pos) break;
    std::optional<std::string> refused = RefusedHeader(include.header);
    if (refused.has_value()) {
      best_pos = include.begin;
      best_feature = std::move(*refused);
      break;
    }
  }
  if (best_pos == std::string::npos) return std::nullopt;
  return absl::StrCat("the CPU backend does not support ", best_feature, " (", kSubmissionFileName,
                      " line ", LineOf(masked, best_pos), ")");
}

namespace {

// A replacement of source[begin, end) by `text` (an insertion when begin ==
// end).
struct Edit {
  size_t begin, end;
  std::string text;
};

// `source` with `edits` (in order, not overlapping) made.
std::string ApplyEdits(std::string_view source, const std::vector<Edit>& edits) {
  std::string out;
  out.reserve(source.size() + edits.size() * 64);
  size_t at = 0;
  for (const Edit& edit : edits) {
    out.append(source.substr(at, edit.begin - at));
    out.append(edit.text);
    at = edit.end;
  }
  out.append(source.substr(at));
  return out;
}

// Where a position lies: in code (a function's body, or a block in one), at
// namespace scope (the file, a namespace's body, an `extern "C" { }` block)
// or elsewhere (a class body, an enum, an initialiser).
enum class Scope { kCode, kNamespace, kOther };

// For each of `positions` (ascending) in `masked`, the scope it lies in
// (defined below).
std::vector<Scope> ScopesOf(std::string_view masked, const std::vector<size_t>& positions);

}  // namespace

std::string RewriteExternShared(std::string_view source) {
  const std::string masked = MaskCommentsAndLiterals(source);
  std::vector<Edit> edits;
  size_t consumed = 0;  // statements already rewritten end before this
  const std::vector<size_t> shared_tokens = FindToken(masked, "__shared__");
  const std::vector<Scope> scopes = ScopesOf(masked, shared_tokens);
  for (size_t t = 0; t < shared_tokens.size(); ++t) {
    const size_t shared = shared_tokens[t];
    if (shared < consumed) continue;
    const size_t start = StatementStart(masked, shared);
    const size_t semicolon = masked.find(';', shared);
    if (semicolon == std::string::npos) continue;
    const std::string_view statement(masked.data() + start, semicolon - start);
    const std::vector<size_t> externs = FindToken(statement, "extern");
    if (externs.size() != 1) continue;
    if (statement.find('=') != std::string_view::npos) continue;
    // The declarator: identifier [ ] at the end of the statement, then any
    // inner dimensions (`tile[][33]`: a pointer to arrays of 33).
    size_t k = statement.size();
    auto skip_space = [&] { k = SkipSpaceBackward(statement, k); };
    skip_space();
    const size_t declarator_end = k;
    // Inner dimensions: bracket groups with something inside, last first.
    size_t dims_begin = k;
    for (;;) {
      skip_space();
      if (k == 0 || statement[k - 1] != ']') break;
      size_t open = k - 1;
      while (open > 0 && statement[open - 1] != '[') --open;
      if (open == 0) break;
      const std::string_view inside = statement.substr(open, k - 1 - open);
      if (inside.find_first_not_of(" \t\r\n") == std::string_view::npos) break;  // the [ ]
      k = open - 1;
      dims_begin = k;
    }
    k = dims_begin;
    skip_space();
    if (k == 0 || statement[k - 1] != ']') continue;
    --k;
    skip_space();
    if (k == 0 || statement[k - 1] != '[') continue;
    const size_t bracket = k - 1;
    --k;
    skip_space();
    const size_t name_end = k;
    while (k > 0 && IsIdentifierChar(statement[k - 1])) --k;
    const size_t name_begin = k;
    if (name_begin == name_end || std::isdigit(static_cast<unsigned char>(statement[name_begin]))) {
      continue;
    }
    // Only one declarator: no comma outside parentheses.
    int depth = 0;
    bool several = false;
    for (size_t j = 0; j < name_begin; ++j) {
      if (statement[j] == '(') ++depth;
      if (statement[j] == ')') --depth;
      if (statement[j] == ',' && depth == 0) several = true;
    }
    if (several) continue;
    const std::string name(statement.substr(name_begin, name_end - name_begin));
    const std::string_view tail(source.data() + start + name_begin, statement.size() - name_begin);
    const auto newlines = std::count(tail.begin(), tail.end(), '\n');
    (void)bracket;
    // The inner dimensions, on one line (their newlines are kept at the end).
    std::string dims(source.substr(start + dims_begin, declarator_end - dims_begin));
    std::replace(dims.begin(), dims.end(), '\n', ' ');
    // `name []` -> pointer, `name [][N]` -> pointer to arrays of N. No
    // thread-local variable initialised as the code runs: each block starts
    // with the library's zero-initialised thread-local data filled with
    // 0xff (FillThreadLocalZeros), such a variable's guard among it, and a
    // guard filled says "initialised" over a pointer filled too.
    const std::string pointer =
        dims.empty() ? absl::StrCat("* ", name) : absl::StrCat("(* ", name, ")", dims);
    const std::string pointer_const =
        dims.empty() ? absl::StrCat("* const ", name) : absl::StrCat("(* const ", name, ")", dims);
    const std::string lines(static_cast<size_t>(newlines), '\n');
    if (scopes[t] == Scope::kCode) {
      // In code: a local pointer, set each time the declaration runs
      // (extern and __shared__ blanked, same length).
      Edit blank_extern{start + externs[0], start + externs[0] + 6, "      "};
      Edit blank_shared{shared, shared + 10, "          "};
      if (blank_shared.begin < blank_extern.begin) std::swap(blank_extern, blank_shared);
      edits.push_back(std::move(blank_extern));  // in order: `__shared__ extern` too
      edits.push_back(std::move(blank_shared));
      edits.push_back({start + name_begin, semicolon,
                       absl::StrCat(pointer_const, " = (decltype(", name,
                                    "))::kerneleval_cpu::detail::rt().dynamic_shared()", lines)});
    } else {
      // At namespace scope: a thread-local pointer among the prelude's own
      // (initialised) data, registered and set as each block starts.
      edits.push_back({start + externs[0], start + externs[0] + 6, "static"});
      edits.push_back(
          {start + name_begin, semicolon + 1,
           absl::StrCat(pointer, " KERNELEVAL_CPU_TDATA(extern_shared_", name, ") = nullptr;",
                        " KERNELEVAL_CPU_DYNAMIC_SHARED(", name, ");", lines)});
    }
    consumed = semicolon + 1;
  }
  return ApplyEdits(source, edits);
}

namespace {

// Whether `pos` of `masked` lies on a preprocessor directive's line (or a
// line it continues with a backslash).
bool OnDirectiveLine(std::string_view masked, size_t pos) {
  size_t line_start = masked.rfind('\n', pos == 0 ? 0 : pos - 1);
  line_start = line_start == std::string_view::npos || pos == 0 ? 0 : line_start + 1;
  for (;;) {
    const size_t first = masked.find_first_not_of(" \t", line_start);
    if (first != std::string_view::npos && masked[first] == '#') return true;
    // Continued from the line before?
    if (line_start < 2) return false;
    size_t end = line_start - 1;  // the '\n' ending the line before
    if (end > 0 && masked[end - 1] == '\r') --end;
    if (end == 0 || masked[end - 1] != '\\') return false;
    const size_t before = masked.rfind('\n', line_start - 2);
    line_start = before == std::string_view::npos ? 0 : before + 1;
  }
}

// The identifier ending at `end` of `masked` (after skipping white space
// backwards), and where it begins.
std::pair<std::string_view, size_t> WordBefore(std::string_view masked, size_t end) {
  end = SkipSpaceBackward(masked, end);
  size_t begin = end;
  while (begin > 0 && IsIdentifierChar(masked[begin - 1])) --begin;
  return {masked.substr(begin, end - begin), begin};
}

// Whether the '{' at `brace` opens a namespace's body or a linkage
// specification: `namespace {`, `namespace a::b {`, `extern "C" {` (the
// literal is masked to spaces).
bool OpensNamespace(std::string_view masked, size_t brace) {
  std::pair<std::string_view, size_t> word = WordBefore(masked, brace);
  if (word.first == "namespace" || word.first == "extern") return true;
  while (!word.first.empty()) {  // a (qualified) namespace's name, last part first
    const size_t k = SkipSpaceBackward(masked, word.second);
    if (k >= 2 && masked[k - 1] == ':' && masked[k - 2] == ':') {
      word = WordBefore(masked, k - 2);
      continue;
    }
    return WordBefore(masked, word.second).first == "namespace";
  }
  return false;
}

// For each of `positions` (ascending) in `masked`, the scope it lies in. A
// '{' opens code after ')' (a parameter list, `__launch_bounds__(...)`, a
// condition) or a function's trailing keyword, or inside code; a namespace
// after `namespace [name]` or `extern "C"`; otherwise a class, enum or
// initialiser.
std::vector<Scope> ScopesOf(std::string_view masked, const std::vector<size_t>& positions) {
  std::vector<Scope> result;
  std::vector<Scope> open;  // the scopes of the braces open at this point
  size_t next = 0;
  for (size_t i = 0; i <= masked.size() && next < positions.size(); ++i) {
    while (next < positions.size() && positions[next] == i) {
      result.push_back(open.empty() ? Scope::kNamespace : open.back());
      ++next;
    }
    if (i == masked.size()) break;
    const char c = masked[i];
    if ((c != '{' && c != '}') || OnDirectiveLine(masked, i)) continue;
    if (c == '}') {
      if (!open.empty()) open.pop_back();
      continue;
    }
    Scope scope = Scope::kOther;
    if (!open.empty() && open.back() == Scope::kCode) {
      scope = Scope::kCode;
    } else {
      const size_t k = SkipSpaceBackward(masked, i);
      const std::string_view word = WordBefore(masked, k).first;
      if ((k > 0 && masked[k - 1] == ')') || word == "const" || word == "noexcept" ||
          word == "mutable" || word == "override" || word == "final") {
        scope = Scope::kCode;
      } else if (OpensNamespace(masked, i)) {
        scope = Scope::kNamespace;
      }
    }
    open.push_back(scope);
  }
  result.resize(positions.size(), Scope::kOther);
  return result;
}

// `source` with each #include directive for which `replace(include)` gives a
// text replaced by that text (the directive's line up to its line break).
template <class Replace>
std::string RewriteIncludeLines(std::string_view source, Replace replace) {
  const std::string masked = MaskCommentsAndLiterals(source);
  std::string out;
  size_t copied = 0;
  for (const IncludeLine& include : FindIncludes(source, masked)) {
    std::optional<std::string> text = replace(include);
    if (!text.has_value()) continue;
    out.append(source.substr(copied, include.begin - copied));
    out.append(*text);
    copied = include.end;
  }
  out.append(source.substr(copied));
  return out;
}

}  // namespace

std::string RewriteCubIncludes(std::string_view source) {
  return RewriteIncludeLines(source, [](const IncludeLine& include) -> std::optional<std::string> {
    if (!IsCubHeader(include.header)) return std::nullopt;
    return "#include \"kerneleval_cpu_cub.h\"";
  });
}

bool IsValidKernelName(std::string_view name) { return plan::IsKernelName(name); }

absl::StatusOr<std::string> DefineLine(std::string_view define) {
  std::string_view body = define;
  if (body.substr(0, 2) == "-D") body.remove_prefix(2);
  const size_t eq = body.find('=');
  const std::string_view name = body.substr(0, eq);
  const std::string_view value = eq == std::string_view::npos ? "1" : body.substr(eq + 1);
  if (!IsMacroName(name) || value.find_first_of("\r\n\\") != std::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("not a -DNAME=VALUE define: ", std::string(define)));
  }
  return absl::StrCat("#define ", std::string(name), " ", std::string(value));
}

int CudaArchValue(std::string_view arch) {
  for (std::string_view prefix : {"sm_", "compute_"}) {
    if (arch.substr(0, prefix.size()) != prefix) continue;
    int value = 0;
    size_t i = prefix.size();
    for (; i < arch.size() && std::isdigit(static_cast<unsigned char>(arch[i])) && value < 10000;
         ++i) {
      value = value * 10 + (arch[i] - '0');
    }
    const std::string_view suffix = arch.substr(i);
    if (i == prefix.size() || value < 10 || !(suffix.empty() || suffix == "a" || suffix == "f")) {
      return 0;
    }
    return value * 10;
  }
  return 0;
}

// The macros NVRTC defines that the submission's code sees here too, and
// the headers it includes do not (they would take their device paths).
constexpr absl::string_view kNvrtcMacros[] = {"__CUDA_ARCH__", "__CUDACC__", "__CUDACC_RTC__"};

std::string WrapIncludes(std::string_view source, std::string_view file_name) {
  return RewriteIncludeLines(source, [&](const IncludeLine& include) -> std::optional<std::string> {
    std::string text;
    for (absl::string_view macro : kNvrtcMacros) {
      absl::StrAppend(&text, "#pragma push_macro(\"", macro, "\")\n#undef ", macro, "\n");
    }
    text.append(source.substr(include.begin, include.end - include.begin));
    text += '\n';
    for (absl::string_view macro : kNvrtcMacros) {
      absl::StrAppend(&text, "#pragma pop_macro(\"", macro, "\")\n");
    }
    absl::StrAppend(&text, "#line ", LineOf(source, include.begin) + 1, " \"",
                    std::string(file_name), "\"");
    return text;
  });
}

namespace {

// Whether NVRTC's macro `name` (expanding to `expansion`) stays the host
// build's in the submission's code.
bool KeptOutOfTheView(std::string_view name, std::string_view expansion) {
  // A function-like macro (or one standing for itself): only its being
  // defined can differ, which only a directive can test (the branch check).
  if (expansion == name) return true;
  // nv/target's: the host build's headers need their own.
  if (name.substr(0, 4) == "_NV_") return true;
  // CUDA's keywords (__device__, __shared__, ...), which the prelude defines.
  return expansion.find("__attribute__") != std::string_view::npos ||
         expansion.find("_Pragma") != std::string_view::npos;
}

// A number or a string literal, which the host build may take as NVRTC's
// value whatever it defines there.
bool IsLiteralExpansion(std::string_view expansion) {
  if (expansion.empty()) return false;
  if (expansion.size() >= 2 && expansion.front() == '"' && expansion.back() == '"') return true;
  if (!std::isdigit(static_cast<unsigned char>(expansion.front()))) return false;
  for (char c : expansion) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '+' && c != '-' &&
        c != '\'') {
      return false;
    }
  }
  return true;
}

// NVRTC's predefined macros for the submission's own code: `enter` saves
// the host build's and defines NVRTC's, `leave` brings the host's back (for
// the submission's #includes and the launchers). A literal value is NVRTC's
// whatever the host defines (__cplusplus, __CUDA_ARCH__, the prelude's
// INT_MAX); any other is NVRTC's where the host defines none.
struct NvrtcView {
  std::string enter;
  std::string leave;
  absl::flat_hash_set<std::string> names;  // the macros it saves and defines
};

NvrtcView ViewOf(const v1::HostBuildProbe& probe) {
  std::vector<std::pair<std::string, std::string>> macros(probe.predefined_macros().begin(),
                                                          probe.predefined_macros().end());
  std::sort(macros.begin(), macros.end());
  NvrtcView view;
  for (const auto& [name, expansion] : macros) {
    if (KeptOutOfTheView(name, expansion) || !IsMacroName(name) ||
        expansion.find_first_of("\r\n\\") != std::string::npos) {
      continue;
    }
    absl::StrAppend(&view.enter, "#pragma push_macro(\"", name, "\")\n");
    if (IsLiteralExpansion(expansion)) {
      absl::StrAppend(&view.enter, "#undef ", name, "\n#define ", name, " ", expansion, "\n");
    } else {
      absl::StrAppend(&view.enter, "#ifndef ", name, "\n#define ", name, " ", expansion,
                      "\n#endif\n");
    }
    absl::StrAppend(&view.leave, "#pragma pop_macro(\"", name, "\")\n");
    view.names.insert(name);
  }
  return view;
}

// The submission (rewritten, same lines as `original`) with NVRTC's view
// left around each #include, and at the start of each conditional branch
// `#define KERNELEVAL_CPU_BRANCH_<i>` where NVRTC entered the branch, an
// #error where it did not; then the #error of each branch NVRTC entered and
// the host build did not. Line numbers stay the user's.
absl::StatusOr<std::string> CheckedSubmission(std::string_view original, std::string_view text,
                                              const v1::HostBuildProbe& probe,
                                              const NvrtcView& view) {
  const std::vector<source::ConditionalBranch> branches = source::FindConditionalBranches(text);
  const std::vector<source::ConditionalBranch> as_submitted =
      source::FindConditionalBranches(original);
  bool same = branches.size() == as_submitted.size();
  for (size_t i = 0; same && i < branches.size(); ++i) {
    same = branches[i].line == as_submitted[i].line;
  }
  if (!same) {
    return absl::InternalError(
        "the CPU backend's source rewrites moved a conditional preprocessor directive");
  }
  std::vector<bool> taken(branches.size(), false);
  for (uint32_t i : probe.branches_taken()) {
    if (i >= branches.size()) {
      return absl::InternalError("the preprocessor probe names a branch the source does not have");
    }
    taken[i] = true;
  }
  const std::string file = absl::StrCat(" \"", kSubmissionFileName, "\"");
  // A #define or #undef of a macro of NVRTC's view before an #include:
  // NVRTC keeps the submission's after the include, this build would take
  // NVRTC's predefined one back (the view is entered again after each).
  size_t last_include = 0;  // every #include counts, a computed one too
  for (const source::Directive& directive :
       source::FindDirectives(text, MaskCommentsAndLiterals(text))) {
    if (directive.name == "include") last_include = directive.begin + 1;
  }
  auto redefined_view_macro = [&](const source::DirectiveLine& directive) -> std::string {
    if (directive.name != "define" && directive.name != "undef") return "";
    const size_t at = static_cast<size_t>(directive.text.data() - text.data());
    if (at >= last_include) return "";
    const size_t name_at = directive.text.find(directive.name) + directive.name.size();
    size_t k = directive.text.find_first_not_of(" \t", name_at);
    size_t end = k;
    while (end < directive.text.size() &&
           (std::isalnum(static_cast<unsigned char>(directive.text[end])) ||
            directive.text[end] == '_')) {
      ++end;
    }
    if (k >= end) return "";
    const std::string name(directive.text.substr(k, end - k));
    if (!view.names.contains(name)) return "";
    return name;
  };
  std::string out = source::InstrumentConditionals(
      text,
      {.branch_start =
           [&](size_t i, const source::ConditionalBranch& branch) {
             if (taken[i]) return absl::StrCat("#define KERNELEVAL_CPU_BRANCH_", i, "\n");
             return absl::StrCat(
                 "#error \"line ", branch.line,
                 ": NVRTC skips this preprocessor branch and the CPU backend's host build takes "
                 "it: code that tells the two builds apart is refused\"\n");
           },
       .line_file = file,
       .other = [&](const source::DirectiveLine& directive) -> std::optional<std::string> {
         if (const std::string name = redefined_view_macro(directive); !name.empty()) {
           return absl::StrCat("#error \"line ", directive.line, ": #", std::string(directive.name),
                               " of ", name,
                               ", which NVRTC predefines, before an #include: the CPU backend's "
                               "host build cannot keep it across the include\"\n#line ",
                               directive.end_line + 1, file);
         }
         // The submission's headers are compiled as the host's (WrapIncludes).
         if (directive.name != "include") return std::nullopt;
         return absl::StrCat(view.leave, std::string(directive.text), "\n", view.enter, "#line ",
                             directive.end_line + 1, file);
       }});
  if (!out.empty() && out.back() != '\n') out += '\n';
  absl::StrAppend(&out, "#line 1 \"kerneleval-branch-check\"\n");
  for (size_t i = 0; i < branches.size(); ++i) {
    if (!taken[i]) continue;
    absl::StrAppend(&out, "#ifndef KERNELEVAL_CPU_BRANCH_", i, "\n#error \"line ", branches[i].line,
                    ": NVRTC takes this preprocessor branch and the CPU backend's host build "
                    "skips it: code that tells the two builds apart is refused\"\n#endif\n");
  }
  return out;
}

}  // namespace

absl::StatusOr<std::string> BuildTranslationUnit(std::string_view source,
                                                 const std::vector<std::string>& defines,
                                                 const std::vector<std::string>& kernel_names,
                                                 int cuda_arch, const v1::HostBuildProbe* probe) {
  // The submission cannot tell the correctness build from the timed one at
  // compile time (a red team's kernel ran a racy histogram only when timed).
  // Here, not at the prelude's end: a precompiled prelude does not carry the
  // #undef of a predefined macro.
  // Every local of the submission's code starts as a pattern (0xfe bytes;
  // a float reads -1.7e38), not as what the stack held: fibers run a
  // block's threads one after another on one stack, so an uninitialised
  // local array found the lookup table the thread before had built at the
  // same address (sweep 38, r03: gelu_bf16 at 2.5x its reference, one table
  // built per OS thread and run, where a GPU thread's local memory is its
  // own). A GPU's uninitialised local is garbage too; zeros hid that. For
  // its code alone: as a flag, on the prelude's too, it made a shared-memory
  // histogram's timed runs 1.15x and correctness runs 1.2x longer
  // (cpu_backend_bench). The submission cannot undo it: #pragma GCC and the
  // optimize and uninitialized attributes are refused (FindUnsupportedFeature).
  std::string tu = absl::StrCat(kPreludeInclude,
                                "#undef __SANITIZE_THREAD__\n"
                                "#pragma GCC optimize(\"trivial-auto-var-init=pattern\")\n");
  std::optional<NvrtcView> view;
  if (probe != nullptr) {
    // NVRTC's predefined macros, then the -D options as NVRTC takes them.
    view = ViewOf(*probe);
    tu += view->enter;
  }
  for (const std::string& define : defines) {
    absl::StatusOr<std::string> line = DefineLine(define);
    if (!line.ok()) return line.status();
    absl::StrAppend(&tu, *line, "\n");
  }
  if (cuda_arch > 0 && !view.has_value()) {
    // As NVRTC defines them: `#ifdef __CUDACC_RTC__ ... #else ... #endif`
    // gave the host build other code than the GPU's (a kernel writing
    // zeros under NVRTC and the right answer here passed, and a host static
    // initialiser could tabulate every answer: sweep 6, x13 and x16).
    absl::StrAppend(&tu, "#define __CUDA_ARCH__ ", cuda_arch,
                    "\n#undef __CUDACC__\n#define __CUDACC__ 1\n#undef __CUDACC_RTC__\n"
                    "#define __CUDACC_RTC__ 1\n");
  }
  absl::StrAppend(&tu, "#line 1 \"", kSubmissionFileName, "\"\n");
  std::string submission = RewriteCubIncludes(RewriteExternShared(source));
  if (view.has_value()) {
    absl::StatusOr<std::string> checked = CheckedSubmission(source, submission, *probe, *view);
    if (!checked.ok()) return checked.status();
    tu += *checked;
    tu += view->leave;
  } else {
    tu += cuda_arch > 0 ? WrapIncludes(submission, kSubmissionFileName) : submission;
    if (!source.empty() && source.back() != '\n') tu += '\n';
  }
  absl::StrAppend(&tu, "#line 1 \"", kLaunchersFileName, "\"\n");
  constexpr char kExport[] = "extern \"C\" __attribute__((visibility(\"default\")))";
  absl::StrAppend(&tu, kExport,
                  " uint32_t kerneleval_cpu_init(const kerneleval_cpu_runtime* runtime) { return "
                  "::kerneleval_cpu::detail::InitRuntime(runtime); }\n");
  absl::StrAppend(&tu, kExport,
                  " const uint32_t kerneleval_cpu_kernel_count = ", kernel_names.size(), ";\n");
  for (size_t i = 0; i < kernel_names.size(); ++i) {
    if (!IsValidKernelName(kernel_names[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat("not a kernel name the CPU backend can launch: ", kernel_names[i]));
    }
    // One line per launcher: a compile error on line i+3 names kernel i.
    absl::StrAppend(&tu, kExport, " const char* kerneleval_cpu_launch_", i,
                    "(const kerneleval_cpu_launch* launch) { return "
                    "::kerneleval_cpu::detail::Launch<&",
                    kernel_names[i], ">(launch); }\n");
  }
  // After every launcher, so that launcher i stays on line i + 3.
  for (size_t i = 0; i < kernel_names.size(); ++i) {
    absl::StrAppend(&tu, kExport, " void kerneleval_cpu_kernel_info_", i,
                    "(kerneleval_cpu_kernel_info* info) { ::kerneleval_cpu::detail::Describe<&",
                    kernel_names[i], ">(info, \"", kernel_names[i], "\"); }\n");
  }
  return tu;
}

absl::Status FuseNoMultiplyAdd(std::string* unit) {
  if (!absl::StartsWith(*unit, kPreludeInclude)) {
    return absl::InvalidArgumentError(
        "not a translation unit of BuildTranslationUnit's: its first line is not the prelude's "
        "#include");
  }
  unit->insert(kPreludeInclude.size(), "#pragma GCC optimize(\"fp-contract=off\")\n");
  return absl::OkStatus();
}

}  // namespace kerneleval::cpu
