#include "evaluator/plan/signature.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "evaluator/plan/lexer.h"
#include "evaluator/plan/strings.h"

namespace kerneleval::plan {
namespace {

using detail::Token;
using detail::TokenKind;

bool Is(const Token& token, std::string_view text) { return token.text == text; }
bool IsIdent(const Token& token) { return token.kind == TokenKind::kIdentifier; }

// Words that qualify a declaration without naming its type.
bool IsQualifier(std::string_view word) {
  static const std::set<std::string_view> kQualifiers = {
      "const",  "volatile", "__restrict__", "__restrict", "restrict", "__grid_constant__",
      "struct", "class",    "typename",     "register",   "enum",     "union"};
  return kQualifiers.count(word) > 0;
}

// Words that are part of a built-in type name, so never a parameter's name.
bool IsBuiltinTypeWord(std::string_view word) {
  static const std::set<std::string_view> kWords = {"int",    "char",  "short",  "long", "unsigned",
                                                    "signed", "float", "double", "bool", "void"};
  return kWords.count(word) > 0;
}

// Words between __global__ and the kernel name that are not the name.
bool IsDeclarationSpecifier(std::string_view word) {
  static const std::set<std::string_view> kWords = {
      "__noinline__", "__forceinline__", "__host__", "__device__", "static",
      "inline",       "extern",          "void",     "__inline__", "constexpr"};
  return kWords.count(word) > 0;
}

// Attributes between __global__ and the kernel name that take arguments.
bool IsAttributeWithArguments(std::string_view word) {
  static const std::set<std::string_view> kWords = {
      "__launch_bounds__", "__maxnreg__", "__cluster_dims__", "__attribute__",
      "__declspec",        "alignas",     "__align__"};
  return kWords.count(word) > 0;
}

enum class ScopeKind { kNamespace, kExternC, kOther };
struct Scope {
  ScopeKind kind;
  std::string name;  // namespaces only; empty for an anonymous one
};

std::string StripComments(std::string_view text) {
  const size_t cut = std::min(text.find("//"), text.find("/*"));
  return std::string(detail::StripSpace(text.substr(0, cut)));
}

std::string JoinTokens(const std::vector<Token>& tokens, size_t begin, size_t end) {
  std::string joined;
  for (size_t i = begin; i < end && i < tokens.size(); ++i) {
    if (!joined.empty()) {
      joined += ' ';
    }
    joined += tokens[i].text;
  }
  return joined;
}

class SourceReader {
 public:
  explicit SourceReader(std::string_view source) : lexed_(detail::Lex(source)) {}

  absl::StatusOr<ParsedSource> Run() {
    ReadPreprocessorLines();
    const std::vector<Token>& tokens = lexed_.tokens;
    size_t i = 0;
    while (i < tokens.size()) {
      const Token& token = tokens[i];
      if (token.kind == TokenKind::kPunct) {
        if (Is(token, "{")) {
          scopes_.push_back(Scope{pending_extern_c_block_          ? ScopeKind::kExternC
                                  : pending_namespace_.has_value() ? ScopeKind::kNamespace
                                                                   : ScopeKind::kOther,
                                  pending_namespace_.value_or("")});
          ClearPending();
          paren_depth_ = 0;
        } else if (Is(token, "}")) {
          if (!scopes_.empty()) {
            scopes_.pop_back();
          }
          ClearPending();
          paren_depth_ = 0;
        } else if (Is(token, ";")) {
          ClearPending();
          paren_depth_ = 0;
        } else if (Is(token, "(")) {
          ++paren_depth_;
        } else if (Is(token, ")")) {
          if (paren_depth_ > 0) {
            --paren_depth_;
          }
        }
        ++i;
        continue;
      }
      if (!IsIdent(token)) {
        ++i;
        continue;
      }
      if (Is(token, "template") && i + 1 < tokens.size() && Is(tokens[i + 1], "<")) {
        pending_template_ = true;
        i = SkipAngles(i + 1);
        continue;
      }
      if (Is(token, "extern") && i + 1 < tokens.size() &&
          tokens[i + 1].kind == TokenKind::kString && tokens[i + 1].text == "\"C\"") {
        if (i + 2 < tokens.size() && Is(tokens[i + 2], "{")) {
          pending_extern_c_block_ = true;
        } else {
          pending_extern_c_ = true;
        }
        i += 2;
        continue;
      }
      if (Is(token, "namespace")) {
        i = ReadNamespaceHead(i);
        continue;
      }
      if (Is(token, "typedef") || Is(token, "using")) {
        ReadAlias(i);
        ++i;
        continue;
      }
      if ((Is(token, "constexpr") || Is(token, "const") || Is(token, "static")) &&
          AtNamespaceScope()) {
        ReadConstant(i);
      }
      const auto macro = global_macros_.find(token.text);
      if (Is(token, "__global__") || macro != global_macros_.end()) {
        if (macro != global_macros_.end() && macro->second) {
          pending_extern_c_ = true;
        }
        absl::StatusOr<size_t> next = ReadKernel(i);
        if (!next.ok()) {
          return next.status();
        }
        i = *next;
        continue;
      }
      ++i;
    }
    for (std::string_view name : attempted_constants_) {
      if (result_.constants.count(name) == 0) result_.unreadable_constants.emplace(name);
    }
    return std::move(result_);
  }

 private:
  void ClearPending() {
    pending_template_ = false;
    pending_extern_c_ = false;
    pending_extern_c_block_ = false;
    pending_namespace_.reset();
  }

  bool AtNamespaceScope() const {
    if (paren_depth_ != 0) {
      return false;
    }
    for (const Scope& scope : scopes_) {
      if (scope.kind == ScopeKind::kOther) {
        return false;
      }
    }
    return true;
  }

  bool InExternCBlock() const {
    for (const Scope& scope : scopes_) {
      if (scope.kind == ScopeKind::kExternC) {
        return true;
      }
    }
    return false;
  }

  std::string NamespacePrefix() const {
    std::string prefix;
    for (const Scope& scope : scopes_) {
      if (scope.kind == ScopeKind::kNamespace && !scope.name.empty()) {
        prefix += detail::Cat(scope.name, "::");
      }
    }
    return prefix;
  }

  // `i` is at '<'; returns the index after the matching '>'. Parentheses
  // nest (so a '>' inside them does not close).
  size_t SkipAngles(size_t i) const {
    const std::vector<Token>& tokens = lexed_.tokens;
    int angle = 0, paren = 0;
    for (; i < tokens.size(); ++i) {
      const Token& t = tokens[i];
      if (Is(t, "(")) {
        ++paren;
      } else if (Is(t, ")")) {
        --paren;
      } else if (paren == 0 && Is(t, "<")) {
        ++angle;
      } else if (paren == 0 && Is(t, ">")) {
        if (--angle == 0) {
          return i + 1;
        }
      } else if (Is(t, ";") || Is(t, "{") || Is(t, "}")) {
        return i;  // malformed: stop before the statement boundary
      }
    }
    return i;
  }

  // `i` is at '('; returns the index of the matching ')' or npos.
  size_t MatchParen(size_t i) const {
    const std::vector<Token>& tokens = lexed_.tokens;
    int depth = 0;
    for (; i < tokens.size(); ++i) {
      if (Is(tokens[i], "(")) {
        ++depth;
      } else if (Is(tokens[i], ")")) {
        if (--depth == 0) {
          return i;
        }
      } else if (Is(tokens[i], "{") || Is(tokens[i], "}") || Is(tokens[i], ";")) {
        return std::string_view::npos;
      }
    }
    return std::string_view::npos;
  }

  // namespace a::b { / namespace { / namespace x = y;
  size_t ReadNamespaceHead(size_t i) {
    const std::vector<Token>& tokens = lexed_.tokens;
    std::string name;
    size_t j = i + 1;
    while (j < tokens.size() && (IsIdent(tokens[j]) || Is(tokens[j], "::"))) {
      name += tokens[j].text;
      ++j;
    }
    if (j < tokens.size() && Is(tokens[j], "{")) {
      pending_namespace_ = name;
    }
    return j;
  }

  // Resolves type words through the aliases, then the built-in table.
  std::optional<TypeInfo> ResolveType(const std::vector<std::string_view>& words) const {
    if (words.size() == 1) {
      auto alias = aliases_.find(words[0]);
      if (alias != aliases_.end()) {
        return alias->second;
      }
    }
    return LookupBuiltinType(words);
  }

  // typedef <builtin> NAME;  using NAME = <builtin>;  (pointers are ignored)
  void ReadAlias(size_t i) {
    const std::vector<Token>& tokens = lexed_.tokens;
    std::vector<std::string_view> words;
    size_t j = i + 1;
    for (; j < tokens.size() && j < i + 16 && !Is(tokens[j], ";"); ++j) {
      if (IsIdent(tokens[j])) {
        if (!IsQualifier(tokens[j].text)) {
          words.push_back(tokens[j].text);
        }
      } else if (!Is(tokens[j], "=") && !Is(tokens[j], "::")) {
        return;  // '*', templates, function types: not a simple alias
      }
    }
    if (j >= tokens.size() || !Is(tokens[j], ";") || words.size() < 2) {
      return;
    }
    std::string_view name;
    std::vector<std::string_view> type_words;
    if (Is(tokens[i], "typedef")) {
      name = words.back();
      type_words.assign(words.begin(), words.end() - 1);
    } else {
      if (i + 2 >= tokens.size() || !Is(tokens[i + 2], "=")) {
        return;  // using namespace ...
      }
      name = words.front();
      type_words.assign(words.begin() + 1, words.end());
      // Drop namespace qualifiers: using T = std::int64_t.
      if (type_words.size() > 1 && (type_words.front() == "std" || type_words.front() == "cuda")) {
        type_words.erase(type_words.begin(), type_words.end() - 1);
      }
    }
    std::optional<TypeInfo> type = ResolveType(type_words);
    if (type.has_value()) {
      aliases_.emplace(std::string(name), *type);
    }
  }

  // [static] [constexpr|const] <integer type> NAME = <integer expression>;
  void ReadConstant(size_t i) {
    const std::vector<Token>& tokens = lexed_.tokens;
    std::vector<std::string_view> words;
    size_t j = i;
    for (; j < tokens.size() && j < i + 8 && IsIdent(tokens[j]); ++j) {
      words.push_back(tokens[j].text);
    }
    if (j >= tokens.size() || !(Is(tokens[j], "=") || Is(tokens[j], "{")) || words.size() < 2) {
      return;
    }
    const std::string_view name = words.back();
    std::vector<std::string_view> type_words;
    bool is_constant = false;
    for (size_t w = 0; w + 1 < words.size(); ++w) {
      if (words[w] == "constexpr" || words[w] == "const") {
        is_constant = true;
      } else if (words[w] != "static" && words[w] != "inline") {
        type_words.push_back(words[w]);
      }
    }
    if (!is_constant) {
      return;
    }
    if (!(type_words.size() == 1 && type_words[0] == "auto")) {
      std::optional<TypeInfo> type = ResolveType(type_words);
      if (!type.has_value() || type->lanes != 1 ||
          (type->kind != ScalarKind::kSignedInt && type->kind != ScalarKind::kUnsignedInt)) {
        return;
      }
    }
    attempted_constants_.push_back(name);
    // Declarators: `kA = 256`, `kA{256}` or `kA = {256}`, separated by
    // commas (`constexpr int kA = 256, kB = kA / 2;`), each defined in turn.
    std::string_view declared = name;
    for (size_t k = j;;) {
      const bool braced = Is(tokens[k], "{");
      size_t value_begin = k + 1;
      if (!braced && value_begin < tokens.size() && Is(tokens[value_begin], "{")) {
        ++value_begin;  // `= {256}`
      }
      const bool closing_brace = braced || Is(tokens[value_begin - 1], "{");
      size_t end = value_begin;
      int depth = 0;
      for (; end < tokens.size() && end < value_begin + 64; ++end) {
        if (depth == 0 && (closing_brace ? Is(tokens[end], "}")
                                         : (Is(tokens[end], ";") || Is(tokens[end], ",")))) {
          break;
        }
        if (Is(tokens[end], "(")) {
          ++depth;
        } else if (Is(tokens[end], ")") && --depth < 0) {
          return;
        } else if (Is(tokens[end], "{") || Is(tokens[end], "}") || Is(tokens[end], ";")) {
          return;
        }
      }
      if (end >= tokens.size() || end == value_begin) {
        return;
      }
      const std::string value_text = JoinTokens(tokens, value_begin, end);
      DefineConstant(declared, value_text);
      // In a namespace also by its qualified name (a launch line's cfg::kTile).
      if (const std::string prefix = NamespacePrefix(); !prefix.empty()) {
        DefineConstant(prefix + std::string(declared), value_text);
      }
      k = closing_brace ? end + 1 : end;  // after the value: ',' or ';'
      if (k >= tokens.size() || !Is(tokens[k], ",")) {
        return;
      }
      // The next declarator: a name, then '=' or '{'.
      if (k + 2 >= tokens.size() || !IsIdent(tokens[k + 1]) ||
          !(Is(tokens[k + 2], "=") || Is(tokens[k + 2], "{"))) {
        return;
      }
      declared = tokens[k + 1].text;
      attempted_constants_.push_back(declared);
      k += 2;
    }
  }

  void DefineConstant(std::string_view name, std::string_view value_text) {
    if (result_.constants.count(name) > 0) {
      return;
    }
    const ParamMap& constants = result_.constants;
    absl::StatusOr<int64_t> value = EvalIntExpr(
        value_text, ParamLookup([&constants](std::string_view n) -> std::optional<int64_t> {
          auto it = constants.find(n);
          if (it == constants.end()) {
            return std::nullopt;
          }
          return it->second;
        }));
    if (value.ok()) {
      result_.constants.emplace(std::string(name), *value);
    }
  }

  // #define NAME <integer expression> / <built-in type> / ... __global__ ...
  void ReadPreprocessorLines() {
    for (const detail::PreprocessorLine& line : lexed_.preprocessor_lines) {
      std::string_view text = detail::StripLeadingSpace(line.text);
      if (text.substr(0, 6) != "define") {
        continue;
      }
      text.remove_prefix(6);
      if (text.empty() || (text[0] != ' ' && text[0] != '\t')) {
        continue;
      }
      text = detail::StripLeadingSpace(text);
      size_t name_end = 0;
      while (name_end < text.size() &&
             (absl::ascii_isalnum(static_cast<unsigned char>(text[name_end])) ||
              text[name_end] == '_')) {
        ++name_end;
      }
      if (name_end == 0 || absl::ascii_isdigit(static_cast<unsigned char>(text[0]))) {
        continue;
      }
      const std::string_view name = text.substr(0, name_end);
      if (name_end < text.size() && text[name_end] == '(') {
        continue;  // function-like
      }
      const std::string value = StripComments(text.substr(name_end));
      if (value.empty()) {
        continue;
      }
      const detail::LexedSource value_tokens = detail::Lex(value);
      bool has_global = false, has_extern_c = false;
      std::vector<std::string_view> words;
      bool only_words = true;
      for (const Token& t : value_tokens.tokens) {
        has_global = has_global || Is(t, "__global__");
        has_extern_c = has_extern_c || (t.kind == TokenKind::kString && t.text == "\"C\"");
        if (IsIdent(t)) {
          if (!IsQualifier(t.text)) {
            words.push_back(t.text);
          }
        } else {
          only_words = false;
        }
      }
      if (has_global) {
        global_macros_.emplace(std::string(name), has_extern_c);
      } else if (only_words && !words.empty() && ResolveType(words).has_value()) {
        aliases_.emplace(std::string(name), *ResolveType(words));
      } else {
        DefineConstant(name, value);
      }
    }
  }

  // `i` is at __global__ (or a macro containing it). Returns the index after
  // the parameter list.
  absl::StatusOr<size_t> ReadKernel(size_t i) {
    const std::vector<Token>& tokens = lexed_.tokens;
    const uint32_t global_line = tokens[i].line;
    KernelSignature kernel;
    kernel.is_template = pending_template_;
    kernel.is_extern_c = pending_extern_c_ || InExternCBlock();
    auto error = [&](std::string_view what) {
      return absl::InvalidArgumentError(detail::Cat("line ", global_line, ": ", what));
    };
    const Token* name = nullptr;
    size_t j = i + 1;
    while (true) {
      if (j >= tokens.size()) {
        return error("__global__ is not followed by a function declaration");
      }
      const Token& t = tokens[j];
      if (Is(t, ";") || Is(t, "{") || Is(t, "}") || Is(t, "=")) {
        return error("__global__ is not followed by a function declaration");
      }
      if (IsIdent(t) && IsAttributeWithArguments(t.text) && j + 1 < tokens.size() &&
          Is(tokens[j + 1], "(")) {
        const size_t close = MatchParen(j + 1);
        if (close == std::string_view::npos) {
          return error(detail::Cat("unterminated ", t.text, "(...)"));
        }
        if (Is(t, "__launch_bounds__")) {
          ReadLaunchBounds(j + 2, close, kernel);
        }
        j = close + 1;
        name = nullptr;
        continue;
      }
      if (IsIdent(t) && IsDeclarationSpecifier(t.text)) {
        ++j;
        name = nullptr;
        continue;
      }
      if (Is(t, "[") && j + 1 < tokens.size() && Is(tokens[j + 1], "[")) {  // [[attribute]]
        while (j < tokens.size() &&
               !(Is(tokens[j], "]") && j + 1 < tokens.size() && Is(tokens[j + 1], "]"))) {
          ++j;
        }
        j += 2;
        continue;
      }
      if (Is(t, "<") && name != nullptr) {  // k<float>(...): an explicit specialization
        kernel.is_template = true;
        j = SkipAngles(j);
        continue;
      }
      if (Is(t, "(")) {
        break;
      }
      name = IsIdent(t) ? &t : nullptr;
      ++j;
    }
    if (name == nullptr || IsBuiltinTypeWord(name->text)) {
      return error("expected the kernel's name before '(' after __global__");
    }
    kernel.name = std::string(name->text);
    kernel.qualified_name = NamespacePrefix() + kernel.name;
    kernel.line = name->line;
    const size_t open = j;
    const size_t close = MatchParen(open);
    if (close == std::string_view::npos) {
      return error(detail::Cat("unterminated parameter list of kernel '",
                               detail::EscapeForMessage(kernel.name), "'"));
    }
    ReadParams(open + 1, close, kernel);
    size_t k = close + 1;
    while (k < tokens.size() && !Is(tokens[k], "{") && !Is(tokens[k], ";") && !Is(tokens[k], "}")) {
      ++k;
    }
    kernel.is_definition = k < tokens.size() && Is(tokens[k], "{");
    pending_template_ = false;
    pending_extern_c_ = false;
    if (absl::Status status = AddKernel(std::move(kernel)); !status.ok()) {
      return status;
    }
    return close + 1;
  }

  void ReadLaunchBounds(size_t begin, size_t end, KernelSignature& kernel) {
    const std::vector<Token>& tokens = lexed_.tokens;
    size_t first_end = begin;
    int depth = 0;
    for (; first_end < end; ++first_end) {
      if (Is(tokens[first_end], "(")) {
        ++depth;
      }
      if (Is(tokens[first_end], ")")) {
        --depth;
      }
      if (Is(tokens[first_end], ",") && depth == 0) {
        break;
      }
    }
    const ParamMap& constants = result_.constants;
    absl::StatusOr<int64_t> value = EvalIntExpr(JoinTokens(tokens, begin, first_end), constants);
    if (value.ok()) {
      kernel.launch_bounds_max_threads = *value;
    }
  }

  void ReadParams(size_t begin, size_t end, KernelSignature& kernel) {
    const std::vector<Token>& tokens = lexed_.tokens;
    if (end == begin + 1 && Is(tokens[begin], "void")) {
      return;  // k(void)
    }
    size_t start = begin;
    int paren = 0, angle = 0, bracket = 0;
    bool in_default = false;
    for (size_t i = begin; i <= end; ++i) {
      if (i == end || (Is(tokens[i], ",") && paren == 0 && angle == 0 && bracket == 0)) {
        if (i > start) {
          kernel.params.push_back(ReadParam(start, i));
        }
        start = i + 1;
        in_default = false;
        continue;
      }
      const Token& t = tokens[i];
      if (Is(t, "(")) {
        ++paren;
      }
      if (Is(t, ")")) {
        --paren;
      }
      if (Is(t, "[")) {
        ++bracket;
      }
      if (Is(t, "]")) {
        --bracket;
      }
      if (Is(t, "=") && paren == 0) {
        in_default = true;
      }
      // In a default value '<' may be less-than; in a type it opens template arguments.
      if (!in_default && Is(t, "<")) {
        ++angle;
      }
      if (!in_default && Is(t, ">") && angle > 0) {
        --angle;
      }
    }
  }

  ParamSig ReadParam(size_t begin, size_t end) const {
    const std::vector<Token>& tokens = lexed_.tokens;
    ParamSig param;
    // Cut the default value and array brackets (an array parameter is a pointer).
    size_t decl_end = end;
    int paren = 0;
    for (size_t i = begin; i < end; ++i) {
      if (Is(tokens[i], "(")) {
        ++paren;
      }
      if (Is(tokens[i], ")")) {
        --paren;
      }
      if (paren == 0 && Is(tokens[i], "=")) {
        param.has_default = true;
        decl_end = i;
        break;
      }
    }
    size_t type_end = decl_end;
    for (size_t i = begin; i < decl_end; ++i) {
      if (Is(tokens[i], "[")) {
        type_end = i;
        for (size_t k = i; k < decl_end; ++k) {
          param.pointer_depth += Is(tokens[k], "[") ? 1 : 0;
        }
        break;
      }
    }
    bool complex_declarator = false;  // function pointers, templates
    bool seen_star = false;
    std::vector<size_t> word_indices;  // identifiers naming the type or the parameter
    for (size_t i = begin; i < type_end; ++i) {
      const Token& t = tokens[i];
      if (IsIdent(t)) {
        if (i + 1 < type_end && Is(tokens[i + 1], "::")) {
          continue;  // std::int64_t
        }
        if (IsQualifier(t.text)) {
          if (Is(t, "const") && !seen_star) {
            param.pointee_is_const = true;
          }
          continue;
        }
        word_indices.push_back(i);
      } else if (Is(t, "*")) {
        ++param.pointer_depth;
        seen_star = true;
      } else if (Is(t, "&")) {
        param.is_reference = true;
      } else if (Is(t, "::")) {
        continue;
      } else {
        complex_declarator = true;  // '(', '<', '...'
      }
    }
    // The last word is the name unless it is part of the type.
    size_t name_index = std::string_view::npos;
    if (word_indices.size() >= 2 && !IsBuiltinTypeWord(tokens[word_indices.back()].text)) {
      name_index = word_indices.back();
      word_indices.pop_back();
      param.name = std::string(tokens[name_index].text);
    }
    std::string type;
    for (size_t i = begin; i < decl_end; ++i) {
      if (i == name_index) {
        continue;
      }
      if (Is(tokens[i], "::") || (i + 1 < decl_end && Is(tokens[i + 1], "::"))) {
        type += tokens[i].text;  // keep std::int64_t together
        continue;
      }
      if (!type.empty() && type.back() != ':') {
        type += ' ';
      }
      type += tokens[i].text;
    }
    param.type = std::move(type);
    std::optional<TypeInfo> resolved;
    if (!complex_declarator) {
      std::vector<std::string_view> words;
      words.reserve(word_indices.size());
      for (size_t index : word_indices) {
        words.push_back(tokens[index].text);
      }
      resolved = ResolveType(words);
    }
    param.is_pointer = param.pointer_depth > 0;
    if (param.is_pointer) {
      param.kind = ScalarKind::kOther;
      param.size_bytes = 8;
      if (param.pointer_depth == 1 && resolved.has_value()) {
        param.pointee = *resolved;
      } else if (param.pointer_depth > 1) {
        param.pointee = TypeInfo{ScalarKind::kOther, 8, 1};  // a pointer to pointers
      }
    } else if (resolved.has_value()) {
      param.kind = resolved->kind;
      param.size_bytes = resolved->size_bytes;
      param.lanes = resolved->lanes;
    }
    return param;
  }

  // Identifies an overload: the name and what each parameter is (not how it
  // is spelled: `const float* __restrict__` and `const float*` are one).
  static std::string OverloadKey(const KernelSignature& kernel) {
    std::string key = kernel.qualified_name;
    for (const ParamSig& p : kernel.params) {
      key += detail::Cat("|", p.pointer_depth, p.is_reference ? "&" : "", ",",
                         static_cast<int>(p.kind), ",", p.size_bytes, ",", p.lanes, ",",
                         static_cast<int>(p.pointee.kind), ",", p.pointee.size_bytes, ",",
                         p.pointee.lanes, ",");
      // Unknown types are told apart by their spelling.
      if ((p.is_pointer ? p.pointee.kind : p.kind) == ScalarKind::kOther) {
        key += p.type;
      }
    }
    return key;
  }

  // A declaration followed by its definition (or a repeated declaration) is
  // one kernel; the definition wins.
  absl::Status AddKernel(KernelSignature kernel) {
    const std::string key = OverloadKey(kernel);
    auto it = kernel_index_.find(key);
    if (it != kernel_index_.end()) {
      KernelSignature& existing = result_.kernels[it->second];
      if (kernel.is_definition && !existing.is_definition) {
        kernel.is_extern_c = kernel.is_extern_c || existing.is_extern_c;
        existing = std::move(kernel);
      }
      return absl::OkStatus();
    }
    if (result_.kernels.size() >= static_cast<size_t>(kMaxKernels)) {
      return absl::InvalidArgumentError(
          detail::Cat("line ", kernel.line, ": more than ", kMaxKernels, " __global__ functions"));
    }
    kernel_index_.emplace(key, result_.kernels.size());
    result_.kernels.push_back(std::move(kernel));
    return absl::OkStatus();
  }

  detail::LexedSource lexed_;
  ParsedSource result_;
  std::vector<std::string_view> attempted_constants_;  // integer constants declared
  std::vector<Scope> scopes_;
  std::map<std::string, TypeInfo, std::less<>> aliases_;
  std::map<std::string, bool, std::less<>> global_macros_;  // name -> has extern "C"
  std::map<std::string, size_t> kernel_index_;
  bool pending_template_ = false;
  bool pending_extern_c_ = false;
  bool pending_extern_c_block_ = false;
  std::optional<std::string> pending_namespace_;
  int paren_depth_ = 0;
};

}  // namespace

absl::StatusOr<ParsedSource> ParseSource(std::string_view source) {
  return SourceReader(source).Run();
}

absl::StatusOr<KernelSignature> SignatureOfInstance(std::string_view name_expression,
                                                    const v1::KernelInfo& kernel) {
  // The instance as a declaration the reader already understands.
  std::string declaration = "__global__ void kerneleval_instance(";
  for (int i = 0; i < kernel.params_size(); ++i) {
    const v1::KernelParam& param = kernel.params(i);
    if (param.type().find_first_of(";{}()#/\n") != std::string::npos) {
      return absl::InvalidArgumentError(
          detail::Cat("kernel ", name_expression, ": parameter ", i + 1,
                      " has a type the plan cannot bind: ", param.type()));
    }
    declaration += detail::Cat(i > 0 ? ", " : "", param.type(), " ",
                               param.name().empty() ? detail::Cat("param", i + 1) : param.name());
  }
  declaration += ");";
  absl::StatusOr<ParsedSource> parsed = ParseSource(declaration);
  if (!parsed.ok()) return parsed.status();
  if (parsed->kernels.size() != 1 ||
      parsed->kernels[0].params.size() != static_cast<size_t>(kernel.params_size())) {
    return absl::InvalidArgumentError(
        detail::Cat("kernel ", name_expression, ": cannot read the instance's parameters"));
  }
  KernelSignature instance = std::move(parsed->kernels[0]);
  instance.name = std::string(name_expression);
  instance.qualified_name = std::string(name_expression);
  instance.is_template = false;
  instance.is_definition = true;
  instance.line = 0;
  if (kernel.max_threads_per_block() > 0) {
    instance.launch_bounds_max_threads = kernel.max_threads_per_block();
  }
  return instance;
}

int64_t MaxThreadsForRegisters(uint32_t registers_per_thread) {
  constexpr int64_t kRegistersPerSm = 65536;
  constexpr int64_t kWarpAllocationUnit = 256;  // [registers] per warp
  constexpr int64_t kMaxThreadsPerBlock = 1024;
  if (registers_per_thread == 0) return kMaxThreadsPerBlock;
  const int64_t per_warp = (int64_t{registers_per_thread} * 32 + kWarpAllocationUnit - 1) /
                           kWarpAllocationUnit * kWarpAllocationUnit;
  return std::min(kMaxThreadsPerBlock, kRegistersPerSm / per_warp * 32);
}

void ApplyRegisterLimits(const google::protobuf::RepeatedPtrField<v1::KernelInfo>& compiled,
                         std::vector<KernelSignature>& signatures) {
  for (KernelSignature& signature : signatures) {
    for (const v1::KernelInfo& kernel : compiled) {
      const bool named = kernel.name_expression().empty()
                             ? !signature.is_template &&
                                   (kernel.name() == signature.qualified_name ||
                                    (absl::StartsWith(kernel.name(), signature.qualified_name) &&
                                     kernel.name()[signature.qualified_name.size()] == '('))
                             : kernel.name_expression() == signature.name;
      if (!named || kernel.registers_per_thread() == 0) continue;
      signature.registers_per_thread = kernel.registers_per_thread();
      signature.register_max_threads = MaxThreadsForRegisters(kernel.registers_per_thread());
      break;
    }
  }
}

absl::StatusOr<std::vector<KernelSignature>> ParseKernelSignatures(std::string_view source) {
  absl::StatusOr<ParsedSource> parsed = ParseSource(source);
  if (!parsed.ok()) {
    return parsed.status();
  }
  return std::move(parsed->kernels);
}

}  // namespace kerneleval::plan
