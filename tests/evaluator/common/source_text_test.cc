#include "evaluator/common/source_text.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace kerneleval::source {
namespace {

// Each branch as "line-end_line:the text from its body to the line break".
std::vector<std::string> Describe(const std::string& source) {
  std::vector<std::string> out;
  for (const ConditionalBranch& b : FindConditionalBranches(source)) {
    const size_t stop = source.find('\n', b.body);
    out.push_back(
        std::to_string(b.line) + "-" + std::to_string(b.end_line) + ":" +
        source.substr(b.body, stop == std::string::npos ? std::string::npos : stop - b.body));
  }
  return out;
}

TEST(FindConditionalBranches, EveryBranchOfEveryGroupInSourceOrder) {
  const std::string source =
      "#if A\na\n#elif B\nb\n#else\nc\n#endif\n"
      "  #  ifdef X\nx\n#ifndef Y\ny\n#endif\n#elifdef Z\nz\n#elifndef W\nw\n#endif\n"
      "#include <x.h>\n#define IF 1\n#ifx\n#endif";
  EXPECT_EQ(Describe(source), (std::vector<std::string>{"1-1:a", "3-3:b", "5-5:c", "8-8:x",
                                                        "10-10:y", "13-13:z", "15-15:w"}));
}

TEST(FindConditionalBranches, ContinuedDirectivesEndOnTheirLastLine) {
  const std::string source = "#if A && \\\n    B \\\r\n    && C\nbody\n#endif\n#else";
  const std::vector<ConditionalBranch> branches = FindConditionalBranches(source);
  ASSERT_EQ(branches.size(), 2u);
  EXPECT_EQ(branches[0].line, 1);
  EXPECT_EQ(branches[0].end_line, 3);
  EXPECT_EQ(source.substr(branches[0].body, 4), "body");
  // The last line without a line break: its body is the source's end.
  EXPECT_EQ(branches[1].line, 6);
  EXPECT_EQ(branches[1].body, source.size());
}

TEST(FindConditionalBranches, NotInCommentsStringsOrContinuedLines) {
  const std::string source =
      "/*\n#if A\n*/\nconst char* s = \"\\\n#if B\";\n// comment \\\n#if C\n"
      "#define M \\\n#if D\nR\"(\n#if E\n)\";\n#if F\n#endif\n";
  EXPECT_EQ(Describe(source), (std::vector<std::string>{"13-13:#endif"}));
}

TEST(MaskCommentsAndLiterals, KeepsLengthAndLineBreaks) {
  const std::string source = "a /* b\nc */ \"d\" 'e' // f\ng";
  const std::string masked = MaskCommentsAndLiterals(source);
  EXPECT_EQ(masked, "a     \n" + std::string(17, ' ') + "\ng");
}

}  // namespace
}  // namespace kerneleval::source
