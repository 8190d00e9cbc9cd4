// SHA-256 (FIPS 180-4), self-contained: the compile cache's content address.
// OpenSSL's development files are not guaranteed on the machines kerneleval
// builds on, and absl has no cryptographic hash.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kerneleval::compile {

class Sha256 {
 public:
  Sha256();
  void Update(std::string_view data);
  // Length-prefixed field: Update(a) Update(b) is ambiguous with Update(ab),
  // UpdateField is not.
  void UpdateField(std::string_view field);
  std::array<uint8_t, 32> Finish();
  std::string HexDigest();  // Finish() as 64 lower-case hex digits

 private:
  void Block(const uint8_t* block);

  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
};

std::string Sha256Hex(std::string_view data);

}  // namespace kerneleval::compile
