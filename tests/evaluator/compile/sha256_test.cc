// SHA-256 against FIPS 180-4 test vectors, across block boundaries.
#include "evaluator/compile/sha256.h"

#include <gtest/gtest.h>

namespace kerneleval::compile {
namespace {

TEST(Sha256Test, KnownVectors) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(Sha256Hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256Test, IncrementalEqualsOneShot) {
  std::string data;
  for (int i = 0; i < 300; ++i) data.push_back(static_cast<char>(i * 7));
  for (size_t split : {0, 1, 55, 56, 63, 64, 65, 128, 299}) {
    Sha256 hash;
    hash.Update(std::string_view(data).substr(0, split));
    hash.Update(std::string_view(data).substr(split));
    EXPECT_EQ(hash.HexDigest(), Sha256Hex(data)) << split;
  }
}

TEST(Sha256Test, FieldsAreUnambiguous) {
  Sha256 a, b;
  a.UpdateField("ab");
  a.UpdateField("c");
  b.UpdateField("a");
  b.UpdateField("bc");
  EXPECT_NE(a.HexDigest(), b.HexDigest());
}

}  // namespace
}  // namespace kerneleval::compile
