// The __global__ functions of a CUDA source and their parameters, read
// straight from the text (before compiling) so that a launch plan can be
// checked against them with messages in the user's terms.
//
// A light reader, not a compiler: comments, strings and preprocessor lines
// are skipped, so a kernel declared through a macro is not seen. It
// understands extern "C" (also as a block), namespaces, templates (flagged),
// __launch_bounds__(...), static/inline/__noinline__, qualifiers
// (const, volatile, __restrict__, __grid_constant__), default arguments,
// array parameters (as pointers) and simple aliases of built-in types
// (typedef, using, object-like #define).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "evaluator/plan/expr.h"
#include "evaluator/plan/types.h"
#include "kerneleval/v1/kerneleval.pb.h"

namespace kerneleval::plan {

struct ParamSig {
  std::string name;  // empty for an unnamed parameter
  // As declared, tokens separated by one space: "const float * __restrict__".
  std::string type;
  bool is_pointer = false;    // a pointer or an array parameter
  bool is_reference = false;  // T& or T&&: the binder refuses these
  int pointer_depth = 0;      // 2 for float**
  // Scalars: the parameter's own type (kind kOther, size 0 when unknown).
  // Pointers: kind kOther, size_bytes 8.
  ScalarKind kind = ScalarKind::kOther;
  uint32_t size_bytes = 0;  // [bytes]
  uint32_t lanes = 1;       // 4 for a float4 passed by value
  // Pointers only: what they point to (float4* -> {kFloat, 16, 4}; kOther
  // with size 0 when unknown, e.g. a struct or a template parameter).
  TypeInfo pointee;
  bool pointee_is_const = false;
  bool has_default = false;
};

struct KernelSignature {
  std::string name;            // as declared: "softmax_kernel"
  std::string qualified_name;  // with enclosing namespaces: "ops::softmax_kernel"
  bool is_extern_c = false;
  bool is_template = false;
  bool is_definition = false;  // has a body (else a declaration)
  uint32_t line = 0;           // 1-based line of the kernel's name
  // __launch_bounds__(max_threads[, ...]) when its first argument evaluates
  // (integer literals and numeric #defines), else nullopt.
  std::optional<int64_t> launch_bounds_max_threads;
  // From the compiled kernel (ApplyRegisterLimits): its registers per thread
  // and the most threads a block can have with them (MaxThreadsForRegisters),
  // when the compile reported them.
  uint32_t registers_per_thread = 0;
  std::optional<int64_t> register_max_threads;
  std::vector<ParamSig> params;
};

struct ParsedSource {
  // In source order; a declaration followed by its definition appears once
  // (the definition). Overloads appear once each.
  std::vector<KernelSignature> kernels;
  // Object-like #defines of integer constants (`#define BLOCK 256`,
  // `#define TILE (BLOCK / 4)`) and namespace-scope `constexpr`/`const`
  // integer variables (`constexpr int kBlock = 256;`), for launch plans and
  // __launch_bounds__. A name defined twice keeps its first value.
  ParamMap constants;
  // Namespace-scope const/constexpr integer variables whose value the reader
  // could not evaluate (`constexpr int kTile = sizeof(T) * 4;`, a value of
  // more than 64 tokens): an unknown-name error of the plan names them.
  std::set<std::string, std::less<>> unreadable_constants;
};

// Most kernels one source may declare.
inline constexpr int kMaxKernels = 256;

// Errors (absl::InvalidArgumentError, "line N: ...") only where a __global__
// is not followed by a readable function declaration (e.g. an unterminated
// parameter list) or there are more than kMaxKernels kernels.
absl::StatusOr<ParsedSource> ParseSource(std::string_view source);

// The signature of a template kernel's instance as NVRTC compiled it: named
// `name_expression` ("scale<float, 4>"), not a template, with the compiled
// kernel's parameter types (`kernel.params(i).type()`, the demangled
// instance's: "float const*") and names, and its __launch_bounds__
// (max_threads_per_block). An error when a type cannot be read.
absl::StatusOr<KernelSignature> SignatureOfInstance(std::string_view name_expression,
                                                    const v1::KernelInfo& kernel);

// The most threads a block can have when each uses `registers_per_thread`
// registers: a block's registers come from one SM's 65536 (every compute
// capability from 5.0 on), allocated per warp in units of 256, and a block
// has at most 1024 threads. 1024 for 0 (not reported). A GPU refuses a
// launch over it ("too many resources requested for launch"); the driver's
// CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK reports the same bound.
int64_t MaxThreadsForRegisters(uint32_t registers_per_thread);

// Sets registers_per_thread and register_max_threads of each signature
// from the compiled kernel it names: by name_expression for a template's
// instance, else by name ("k", or demangled "ns::k(float const*, int)"
// for qualified name "ns::k").
void ApplyRegisterLimits(const google::protobuf::RepeatedPtrField<v1::KernelInfo>& compiled,
                         std::vector<KernelSignature>& signatures);

// ParseSource(source)->kernels.
absl::StatusOr<std::vector<KernelSignature>> ParseKernelSignatures(std::string_view source);

}  // namespace kerneleval::plan
