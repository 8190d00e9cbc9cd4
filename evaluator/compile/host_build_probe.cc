#include "evaluator/compile/host_build_probe.h"

#include <cctype>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <random>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "evaluator/common/source_text.h"
#include "evaluator/compile/diagnostics.h"

namespace kerneleval::compile {
namespace {

// NVRTC 13.0's: the names in libnvrtc.so and libnvrtc-builtins.so that NVRTC
// defines, probed with every option a submission may set (host_build_probe_test checks the list
// against the installed library).
const std::vector<absl::string_view> kNvrtcPredefinedNames = {
    "__ARRAY_OPERATORS",
    "__BASE_FILE__",  // "kernel.cu", which the host build names its file too
    "__ASSERT_STR_HELPER",
    "__CHAR16_T_AND_CHAR32_T",
    "__COMMON_FUNCTIONS_H__",
    "__CUDACC_RTC_BUILTIN_CRT_HELPERS__",
    "__CUDACC_RTC_BUILTIN_VECTOR_TYPES__",
    "__CUDACC_RTC__",
    "__CUDACC_VER_BUILD__",
    "__CUDACC_VER_MAJOR__",
    "__CUDACC_VER_MINOR__",
    "__CUDACC_VER__",
    "__CUDACC__",
    "__CUDANVVM__",
    "__CUDART_API_PTDS",
    "__CUDART_API_PTSZ",
    "__CUDART_API_VERSION",
    "__CUDA_API_VER_MAJOR__",
    "__CUDA_API_VER_MINOR__",
    "__CUDA_ARCH_FAMILY_SPECIFIC__",
    "__CUDA_ARCH_FEAT_SM100_ALL",
    "__CUDA_ARCH_FEAT_SM90_ALL",
    "__CUDA_ARCH_HAS_FEATURE__",
    "__CUDA_ARCH_LIST__",
    "__CUDA_ARCH_SPECIFIC__",
    "__CUDA_ARCH__",
    "__CUDA_FTZ",
    "__CUDA_HAS_ARCH_FAMILY_SPECIFIC",
    "__CUDA_HAS_ARCH_SPECIFIC",
    "__CUDA_MINIMUM_ARCH__",
    "__CUDA_PREC_DIV",
    "__CUDA_PREC_SQRT",
    "__CUDA_RUNTIME_API_H__",
    "__CUDA_RUNTIME_H__",
    "__DEVICE_ATOMIC_FUNCTIONS_H__",
    "__DEVICE_DOUBLE_FUNCTIONS_H__",
    "__DEVICE_FUNCTIONS_H__",
    "__DEVICE_LAUNCH_PARAMETERS_H__",
    "__DEVICE_TYPES_H__",
    "__DRIVER_TYPES_H__",
    "__EDG_CONSTEXPR_ENABLED__",
    "__EDG_IA64_ABI",
    "__EDG_PTRDIFF_TYPE__",
    "__EDG_RUNTIME_USES_NAMESPACES",
    "__EDG_SIZE_TYPE__",
    "__EDG_TYPE_TRAITS_ENABLED",
    "__EDG_VERSION__",
    "__EDG__",
    "__EXCEPTIONS",
    "__HOST_CONFIG_H__",
    "__HOST_DEFINES_H__",
    "__LIBRARY_TYPES_H__",
    "__LP64__",
    "__MATH_FUNCTIONS_H__",
    "__NVCC_DIAG_PRAGMA_SUPPORT__",
    "__NVRTC_DEVICE_RUNTIME_H__",
    "__NV_ATOMIC_ADDRESSOF",
    "__NV_ATOMIC_ALIGNOF",
    "__NV_ATOMIC_REQUIRES",
    "__NV_ATOMIC_RET",
    "__NV_ATOMIC_RET_TYPE",
    "__NV_ATOMIC_TEMP",
    "__NV_ATOMIC_TRIVIALLY_COPYABLE",
    "__NV_BUILTIN_INITIALIZER_LIST",
    "__NV_BUILTIN_MOVE_FORWARD",
    "__NV_GLIBC_PROVIDES_IEC_60559_FUNCS",
    "__NV_PAREN_NO",
    "__NV_PAREN_YES",
    "__NV_SILENCE_DEPRECATION_BEGIN",
    "__NV_SILENCE_DEPRECATION_END",
    "__NV_TARGET_H",
    "__NV_TEST_PAREN_DUMMY",
    "__PLACEMENT_DELETE",
    "__PRAGMA_REDEFINE_EXTNAME",
    "__RTTI",
    "__SIGNED_CHARS__",
    "__SM_100_RT_H__",
    "__SM_30_INTRINSICS_H__",
    "__SM_32_INTRINSICS_H__",
    "__SM_35_ATOMIC_FUNCTIONS_H__",
    "__SM_35_INTRINSICS_H__",
    "__SM_80_RT_H__",
    "__SM_90_RT_H__",
    "__STDCPP_DEFAULT_NEW_ALIGNMENT__",
    "__STDC_HOSTED__",
    "__STDC__",
    "__SURFACE_INDIRECT_FUNCTIONS_H__",
    "__SURFACE_TYPES_H__",
    "__TEXTURE_INDIRECT_FUNCTIONS_H__",
    "__TEXTURE_TYPES_H__",
    "__THROW",
    "__USE_FAST_MATH__",
    "__VARIADIC_TEMPLATES",
    "__VECTOR_FUNCTIONS_H__",
    "__VECTOR_TYPES_H__",
    "__align__",
    "__annotate__",
    "__block_size__",
    "__builtin_align__",
    "__cdecl",
    "__cluster_dims__",
    "__constant__",
    "__cplusplus",
    "__cpp_aggregate_bases",
    "__cpp_aggregate_nsdmi",
    "__cpp_aggregate_paren_init",
    "__cpp_alias_templates",
    "__cpp_aligned_new",
    "__cpp_attributes",
    "__cpp_binary_literals",
    "__cpp_capture_star_this",
    "__cpp_char8_t",
    "__cpp_concepts",
    "__cpp_conditional_explicit",
    "__cpp_consteval",
    "__cpp_constexpr",
    "__cpp_constexpr_dynamic_alloc",
    "__cpp_constinit",
    "__cpp_decltype",
    "__cpp_decltype_auto",
    "__cpp_deduction_guides",
    "__cpp_delegating_constructors",
    "__cpp_designated_initializers",
    "__cpp_enumerator_attributes",
    "__cpp_exceptions",
    "__cpp_explicit_bool",
    "__cpp_fold_expressions",
    "__cpp_generic_lambdas",
    "__cpp_guaranteed_copy_elision",
    "__cpp_hex_float",
    "__cpp_if_constexpr",
    "__cpp_impl_destroying_delete",
    "__cpp_impl_three_way_comparison",
    "__cpp_inheriting_constructors",
    "__cpp_init_captures",
    "__cpp_initializer_lists",
    "__cpp_inline_variables",
    "__cpp_lambdas",
    "__cpp_namespace_attributes",
    "__cpp_nested_namespace_definitions",
    "__cpp_noexcept_function_type",
    "__cpp_nontype_template_args",
    "__cpp_nontype_template_parameter_auto",
    "__cpp_nsdmi",
    "__cpp_range_based_for",
    "__cpp_raw_strings",
    "__cpp_ref_qualifiers",
    "__cpp_return_type_deduction",
    "__cpp_rtti",
    "__cpp_rvalue_references",
    "__cpp_sized_deallocation",
    "__cpp_static_assert",
    "__cpp_structured_bindings",
    "__cpp_template_template_args",
    "__cpp_threadsafe_static_init",
    "__cpp_unicode_characters",
    "__cpp_unicode_literals",
    "__cpp_user_defined_literals",
    "__cpp_using_enum",
    "__cpp_variable_templates",
    "__cpp_variadic_templates",
    "__cpp_variadic_using",
    "__cudaGet_blockDim",
    "__cudaGet_blockIdx",
    "__cudaGet_gridDim",
    "__cudaGet_threadIdx",
    "__cudaGet_warpSize",
    "__cudart_builtin__",
    "__device__",
    "__device_builtin__",
    "__device_builtin_surface_type__",
    "__device_builtin_texture_type__",
    "__export__",
    "__forceinline__",
    "__global__",
    "__grid_constant__",
    "__has_attribute",
    "__has_builtin",
    "__has_cpp_attribute",
    "__has_extension",
    "__has_feature",
    "__host__",
    "__import__",
    "__inline_hint__",
    "__launch_bounds__",
    "__local_maxnreg__",
    "__location__",
    "__managed__",
    "__maxnreg__",
    "__no_return__",
    "__noinline__",
    "__nv_pure__",
    "__nv_register_params__",
    "__shared__",
    "__specialization_static",
    "__thread__",
    "__tile__",
    "__tile_builtin__",
    "__tile_global__",
    "__volatile__"};

// Runs NVRTC on `source`; the raw log, and the PTX when `want_ptx`.
struct ProbeRun {
  bool compiled = false;
  std::string log;
  std::string ptx;
};

absl::StatusOr<ProbeRun> RunNvrtc(const std::string& source,
                                  const std::vector<std::string>& options, const std::string& arch,
                                  const NvrtcSettings& settings, bool want_ptx) {
  // No PCH: the probes' text differs from the submission's before its
  // includes, and would leave a PCH file per submission.
  const NvrtcSettings plain{.toolkit = settings.toolkit, .pch_dir = ""};
  absl::StatusOr<NvrtcProgram> program = NvrtcProgram::Create(source, std::string(kProgramName));
  if (!program.ok()) return program.status();
  const absl::StatusOr<nvrtcResult> compiled =
      program->Compile(NvrtcArguments(options, arch, plain));
  if (!compiled.ok()) return compiled.status();
  ProbeRun run;
  run.compiled = *compiled == NVRTC_SUCCESS;
  absl::StatusOr<std::string> log = program->Log();
  if (!log.ok()) return log.status();
  run.log = *std::move(log);
  if (run.compiled && want_ptx) {
    absl::StatusOr<std::string> ptx = program->Ptx();
    if (!ptx.ok()) return ptx.status();
    run.ptx = *std::move(ptx);
  }
  return run;
}

// The names the prelude #defines (at the start of a line, as it writes them).
std::vector<std::string> PreludeMacroNames(const std::string& prelude_path) {
  std::ifstream in(prelude_path);
  std::vector<std::string> names;
  std::string line;
  while (std::getline(in, line)) {
    absl::string_view text = absl::StripLeadingAsciiWhitespace(line);
    if (!absl::ConsumePrefix(&text, "#define ")) continue;
    size_t end = 0;
    while (end < text.size() &&
           (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_')) {
      ++end;
    }
    if (end > 0) names.emplace_back(text.substr(0, end));
  }
  return names;
}

// The bytes of `.b8 kerneleval_probe_<i>[n] = {b0, b1, ...};` (all zero
// when the PTX gives no initialiser), NUL dropped; index -> text.
std::map<size_t, std::string> ProbeArrays(absl::string_view ptx) {
  std::map<size_t, std::string> values;
  constexpr absl::string_view kPrefix = ".b8 kerneleval_probe_";
  for (size_t at = ptx.find(kPrefix); at != absl::string_view::npos;
       at = ptx.find(kPrefix, at + 1)) {
    const size_t line_end = std::min(ptx.find('\n', at), ptx.size());
    const absl::string_view line = ptx.substr(at + kPrefix.size(), line_end - at - kPrefix.size());
    size_t index = 0;
    if (!absl::SimpleAtoi(line.substr(0, line.find('[')), &index)) continue;
    std::string text;
    const size_t open = line.find('{');
    const size_t close = line.find('}');
    if (open != absl::string_view::npos && close != absl::string_view::npos && close > open) {
      for (absl::string_view byte : absl::StrSplit(line.substr(open + 1, close - open - 1), ',')) {
        int value = 0;
        if (absl::SimpleAtoi(absl::StripAsciiWhitespace(byte), &value) && value != 0) {
          text.push_back(static_cast<char>(value));
        }
      }
    }
    values[index] = std::move(text);
  }
  return values;
}

// NVRTC's predefined macros for `options` (no -D) and `arch`.
absl::StatusOr<std::map<std::string, std::string>> PredefinedMacros(
    const std::vector<std::string>& options, const std::string& arch,
    const NvrtcSettings& settings) {
  std::vector<std::string> names(kNvrtcPredefinedNames.begin(), kNvrtcPredefinedNames.end());
  // The architecture feature macro of this arch (sm_90a: __CUDA_ARCH_FEAT_SM90_ALL).
  size_t digits = arch.find('_');
  if (digits != std::string::npos) {
    std::string number;
    for (size_t i = digits + 1;
         i < arch.size() && std::isdigit(static_cast<unsigned char>(arch[i])); ++i) {
      number.push_back(arch[i]);
    }
    if (!number.empty()) names.push_back(absl::StrCat("__CUDA_ARCH_FEAT_SM", number, "_ALL"));
  }
  for (std::string& name : PreludeMacroNames(settings.toolkit.prelude)) {
    names.push_back(std::move(name));
  }
  std::string battery =
      "#define KERNELEVAL_PROBE_TEXT_(...) #__VA_ARGS__\n"
      "#define KERNELEVAL_PROBE_TEXT(...) KERNELEVAL_PROBE_TEXT_(__VA_ARGS__)\n";
  for (size_t i = 0; i < names.size(); ++i) {
    absl::StrAppend(&battery, "#ifdef ", names[i], "\n__device__ char kerneleval_probe_", i,
                    "[] = KERNELEVAL_PROBE_TEXT(", names[i], ");\n#endif\n");
  }
  absl::StatusOr<ProbeRun> run = RunNvrtc(battery, options, arch, settings, /*want_ptx=*/true);
  if (!run.ok()) return run.status();
  if (!run->compiled) {
    return absl::InternalError(
        absl::StrCat("NVRTC refused the predefined-macro probe: ", run->log.substr(0, 2000)));
  }
  std::map<std::string, std::string> macros;
  for (auto& [index, text] : ProbeArrays(run->ptx)) {
    if (index < names.size()) macros[names[index]] = std::move(text);
  }
  return macros;
}

std::string Nonce() {
  std::random_device device;
  return absl::StrFormat("%08x%08x", device(), device());
}

}  // namespace

const std::vector<absl::string_view>& NvrtcPredefinedMacroNames() { return kNvrtcPredefinedNames; }

std::string BranchMarker(absl::string_view nonce, size_t branch) {
  return absl::StrCat("kerneleval_branch_", nonce, ":", branch);
}

absl::StatusOr<v1::HostBuildProbe> ProbeHostBuild(const std::string& source,
                                                  const std::vector<std::string>& user_options,
                                                  const std::string& arch,
                                                  const NvrtcSettings& settings) {
  v1::HostBuildProbe probe;
  std::vector<std::string> without_defines;
  for (const std::string& option : user_options) {
    if (!absl::StartsWith(option, "-D") && !absl::StartsWith(option, "--define-macro")) {
      without_defines.push_back(option);
    }
  }
  {
    // One battery per option set and arch in this worker's life.
    static std::mutex mutex;
    static std::map<std::string, std::map<std::string, std::string>> cache;
    const std::string key = absl::StrCat(arch, " ", absl::StrJoin(without_defines, " "));
    std::lock_guard lock(mutex);
    auto it = cache.find(key);
    if (it == cache.end()) {
      absl::StatusOr<std::map<std::string, std::string>> macros =
          PredefinedMacros(without_defines, arch, settings);
      if (!macros.ok()) return macros.status();
      it = cache.emplace(key, *std::move(macros)).first;
    }
    for (const auto& [name, text] : it->second) (*probe.mutable_predefined_macros())[name] = text;
  }

  const std::string nonce = Nonce();
  bool line_directive = false;
  size_t branches = 0;
  const std::string marked = source::InstrumentConditionals(
      source, {.branch_start =
                   [&](size_t index, const source::ConditionalBranch&) {
                     ++branches;
                     return absl::StrCat("#pragma message(\"", BranchMarker(nonce, index), "\")\n");
                   },
               .line_file = "",
               .other = [&](const source::DirectiveLine& directive) -> std::optional<std::string> {
                 if (directive.name == "line") line_directive = true;
                 return std::nullopt;
               }});
  if (line_directive) {
    // The markers put every line back where the source has it, which a
    // source's own #line would move: their numbers would differ from the
    // GPU build's.
    probe.set_error("the CPU backend does not support #line directives");
    return probe;
  }
  if (branches == 0) return probe;  // nothing for NVRTC's front end to tell
  std::vector<std::string> options = user_options;
  options.emplace_back("-fdevice-syntax-only");
  absl::StatusOr<ProbeRun> run = RunNvrtc(marked, options, arch, settings, /*want_ptx=*/false);
  if (!run.ok()) return run.status();
  if (!run->compiled) {
    probe.set_error(
        absl::StrCat("NVRTC did not compile the source with a marker in each preprocessor branch: ",
                     UserFacingLog(run->log, "").substr(0, 1000)));
    return probe;
  }
  for (size_t i = 0; i < branches; ++i) {
    if (absl::StrContains(run->log, absl::StrCat("\"", BranchMarker(nonce, i), "\""))) {
      probe.add_branches_taken(static_cast<uint32_t>(i));
    }
  }
  return probe;
}

}  // namespace kerneleval::compile
