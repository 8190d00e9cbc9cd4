// The driver loader without a driver, the CUresult table and the error macros.
// CPU-only: nothing here needs a GPU.
#include "evaluator/cuda/driver.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace kerneleval::cuda {
namespace {

TEST(DriverLoadTest, MissingLibraryIsACleanError) {
  absl::StatusOr<const DriverApi*> api = LoadDriverFrom("libkerneleval-no-such-driver.so.1");
  ASSERT_FALSE(api.ok());
  EXPECT_EQ(api.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(api.status().message().substr(0, 50),
            "no CUDA driver (libkerneleval-no-such-driver.so.1 ");
  EXPECT_NE(api.status().message().find("not found"), absl::string_view::npos);
}

TEST(DriverLoadTest, ALibraryThatIsNotTheDriverIsACleanError) {
  absl::StatusOr<const DriverApi*> api = LoadDriverFrom("libc.so.6");
  ASSERT_FALSE(api.ok());
  EXPECT_EQ(api.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(api.status().message().find("cuGetProcAddress_v2"), absl::string_view::npos)
      << api.status();
}

TEST(DriverLoadTest, TheToolkitStubIsNotADriver) {
  // The stub answers every call with CUDA_ERROR_STUB_LIBRARY (34).
  absl::StatusOr<const DriverApi*> api = LoadDriverFrom(KERNELEVAL_CUDA_STUB_LIBRARY);
  ASSERT_FALSE(api.ok());
  EXPECT_EQ(api.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(api.status().message().find("no CUDA driver"), absl::string_view::npos) << api.status();
  EXPECT_NE(api.status().message().find("stub"), absl::string_view::npos) << api.status();
}

TEST(DriverLoadTest, ADriverOlderThanTheToolkitIsAClearPrecondition) {
  // An R570 driver (CUDA 12.8), and drivers for 12.4 and 12.0, with this
  // CUDA 13 build: said at load, not as CUDA_ERROR_UNSUPPORTED_PTX_VERSION
  // at the first module. Below 12.8 the driver refuses cuEventElapsedTime at
  // ABI 12080 (CUDA_ERROR_INVALID_VALUE, as the test driver does too), which
  // was what the load said before it reached the version.
  for (const auto& [version, said] :
       {std::pair{"12080", "12.8"}, std::pair{"12040", "12.4"}, std::pair{"12000", "12.0"}}) {
    ::setenv("KERNELEVAL_FAKE_CUDA_DRIVER_VERSION", version, 1);
    absl::StatusOr<const DriverApi*> api = LoadDriverFrom(KERNELEVAL_FAKE_CUDA_LIBRARY);
    ::unsetenv("KERNELEVAL_FAKE_CUDA_DRIVER_VERSION");
    ASSERT_FALSE(api.ok()) << version;
    EXPECT_TRUE(absl::IsFailedPrecondition(api.status())) << api.status();
    EXPECT_NE(api.status().message().find(
                  absl::StrCat("supports CUDA ", said, ", older than the CUDA 13")),
              std::string::npos)
        << api.status();
    EXPECT_NE(api.status().message().find("KERNELEVAL_CUDA_ALLOW_OLDER_DRIVER=1"),
              std::string::npos)
        << api.status();
  }
}

TEST(DriverLoadTest, AnOlderDriverAllowedLoadsWithEveryEntryAtItsOwnVersion) {
  // KERNELEVAL_CUDA_ALLOW_OLDER_DRIVER=1 on a CUDA 12.4 driver: every entry
  // point is asked for at most at 12.4 (cuEventElapsedTime at 12080 would
  // be refused), so the table loads.
  ::setenv("KERNELEVAL_FAKE_CUDA_DRIVER_VERSION", "12040", 1);
  ::setenv("KERNELEVAL_CUDA_ALLOW_OLDER_DRIVER", "1", 1);
  absl::StatusOr<const DriverApi*> api = LoadDriverFrom(KERNELEVAL_FAKE_CUDA_LIBRARY);
  ::unsetenv("KERNELEVAL_CUDA_ALLOW_OLDER_DRIVER");
  ::unsetenv("KERNELEVAL_FAKE_CUDA_DRIVER_VERSION");
  ASSERT_TRUE(api.ok()) << api.status();
  EXPECT_EQ((*api)->driver_version, 12040);
#define KE_EXPECT_RESOLVED(name, abi_version) EXPECT_NE((*api)->name, nullptr) << #name;
  KERNELEVAL_CUDA_DRIVER_FUNCTIONS(KE_EXPECT_RESOLVED)
#undef KE_EXPECT_RESOLVED
}

TEST(DriverLoadTest, AnOlderMinorVersionIsRefusedAndTheSameOrNewerLoads) {
  // The minor version counts: PTX of a 13.1 toolkit does not load on a 13.0
  // driver. One minor below this build's toolkit (on a 13.0 build that is
  // 12.9, which the major version alone refused too), then its own version.
  const int older = CUDA_VERSION % 1000 >= 10 ? CUDA_VERSION - 10 : CUDA_VERSION - 1000 + 90;
  ::setenv("KERNELEVAL_FAKE_CUDA_DRIVER_VERSION", absl::StrCat(older).c_str(), 1);
  absl::StatusOr<const DriverApi*> refused = LoadDriverFrom(KERNELEVAL_FAKE_CUDA_LIBRARY);
  ::setenv("KERNELEVAL_FAKE_CUDA_DRIVER_VERSION", absl::StrCat(CUDA_VERSION).c_str(), 1);
  absl::StatusOr<const DriverApi*> same = LoadDriverFrom(KERNELEVAL_FAKE_CUDA_LIBRARY);
  ::unsetenv("KERNELEVAL_FAKE_CUDA_DRIVER_VERSION");
  EXPECT_TRUE(absl::IsFailedPrecondition(refused.status())) << refused.status();
  EXPECT_NE(refused.status().message().find("older than the CUDA"), std::string::npos)
      << refused.status();
  EXPECT_TRUE(same.ok()) << same.status();
}

TEST(DriverLoadTest, TheProcessDriverLoadsOrFailsCleanly) {
  // Here (no driver): the clean error, twice (cached). On a GPU machine: a
  // table with every entry point and at least one device.
  absl::StatusOr<const DriverApi*> first = LoadDriver();
  absl::StatusOr<const DriverApi*> second = LoadDriver();
  EXPECT_EQ(first.status(), second.status());
  if (first.ok()) {
    EXPECT_EQ(*first, *second);
    EXPECT_GE((*first)->device_count, 1);
    EXPECT_GE((*first)->driver_version, 12000);
#define KE_EXPECT_RESOLVED(name, abi_version) EXPECT_NE((*first)->name, nullptr) << #name;
    KERNELEVAL_CUDA_DRIVER_FUNCTIONS(KE_EXPECT_RESOLVED)
#undef KE_EXPECT_RESOLVED
  } else {
    EXPECT_EQ(first.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(first.status().message().substr(0, 7), "no CUDA") << first.status();
  }
}

TEST(CuResultTableTest, NamesAndDescriptions) {
  EXPECT_EQ(CuResultName(CUDA_SUCCESS), "CUDA_SUCCESS");
  EXPECT_EQ(CuResultName(CUDA_ERROR_ILLEGAL_ADDRESS), "CUDA_ERROR_ILLEGAL_ADDRESS");
  EXPECT_EQ(CuResultName(CUDA_ERROR_STUB_LIBRARY), "CUDA_ERROR_STUB_LIBRARY");
  EXPECT_EQ(CuResultName(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES), "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES");
  EXPECT_EQ(CuResultName(static_cast<CUresult>(123456)), "CUDA_ERROR_UNKNOWN_CODE");
  EXPECT_EQ(CuResultDescription(static_cast<CUresult>(123456)), "");
  EXPECT_NE(CuResultDescription(CUDA_ERROR_ILLEGAL_ADDRESS)
                .find("load or store instruction on an invalid memory address"),
            absl::string_view::npos);
}

TEST(CuResultTableTest, EveryCodeOfTheHeaderIsKnown) {
  // Parse enum cudaError_enum out of the cuda.h we compile against: a newer
  // toolkit that adds codes makes this fail until the table is regenerated.
  std::ifstream header(KERNELEVAL_CUDA_H);
  ASSERT_TRUE(header) << KERNELEVAL_CUDA_H;
  std::stringstream text;
  text << header.rdbuf();
  const std::string all = text.str();
  const size_t begin = all.find("typedef enum cudaError_enum {");
  const size_t end = all.find("} CUresult;", begin);
  ASSERT_NE(begin, std::string::npos);
  ASSERT_NE(end, std::string::npos);
  const std::string body = all.substr(begin, end - begin);
  const std::regex entry(R"((CUDA_[A-Z0-9_]+)\s*=\s*(\d+))");
  size_t count = 0;
  for (auto it = std::sregex_iterator(body.begin(), body.end(), entry);
       it != std::sregex_iterator(); ++it) {
    const std::string name = (*it)[1];
    const int value = std::stoi((*it)[2]);
    EXPECT_EQ(CuResultName(static_cast<CUresult>(value)), name) << value;
    EXPECT_FALSE(CuResultDescription(static_cast<CUresult>(value)).empty()) << name;
    ++count;
  }
  EXPECT_GT(count, 90u);
  EXPECT_EQ(count, CuResultTableSize());
}

TEST(CuResultTableTest, StickyErrors) {
  for (CUresult sticky :
       {CUDA_ERROR_ILLEGAL_ADDRESS, CUDA_ERROR_MISALIGNED_ADDRESS, CUDA_ERROR_LAUNCH_FAILED,
        CUDA_ERROR_ASSERT, CUDA_ERROR_ILLEGAL_INSTRUCTION, CUDA_ERROR_HARDWARE_STACK_ERROR,
        CUDA_ERROR_INVALID_PC, CUDA_ERROR_NVLINK_UNCORRECTABLE, static_cast<CUresult>(98765)}) {
    EXPECT_TRUE(IsStickyError(sticky)) << CuResultName(sticky);
  }
  for (CUresult recoverable :
       {CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_OUT_OF_MEMORY, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
        CUDA_ERROR_NOT_READY, CUDA_ERROR_NOT_FOUND}) {
    EXPECT_FALSE(IsStickyError(recoverable)) << CuResultName(recoverable);
  }
  // A status: by the CUresult it carries; a status without one is not sticky.
  EXPECT_TRUE(IsStickyError(CuError(CUDA_ERROR_ILLEGAL_ADDRESS, "call", __FILE__, __LINE__)));
  EXPECT_FALSE(IsStickyError(CuError(CUDA_ERROR_OUT_OF_MEMORY, "call", __FILE__, __LINE__)));
  EXPECT_FALSE(IsStickyError(absl::InternalError("no CUresult")));
}

CUresult Fake(CUresult result) { return result; }

absl::Status CallsFake(CUresult result) {
  KE_CU_RETURN_IF_ERROR(Fake(result));
  return absl::OkStatus();
}

TEST(CuErrorMacroTest, CarriesCallFileLineAndName) {
  EXPECT_TRUE(CallsFake(CUDA_SUCCESS).ok());
  const absl::Status status = CallsFake(CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  const std::string message(status.message());
  EXPECT_NE(message.find("CUDA_ERROR_OUT_OF_MEMORY (2)"), std::string::npos) << message;
  EXPECT_NE(message.find("in Fake(result)"), std::string::npos) << message;
  EXPECT_NE(message.find("tests/evaluator/cuda/driver_test.cc:"), std::string::npos) << message;
  ASSERT_TRUE(CuResultOf(status).has_value());
  EXPECT_EQ(*CuResultOf(status), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_FALSE(CuResultOf(absl::InternalError("x")).has_value());
  EXPECT_EQ(CallsFake(CUDA_ERROR_INVALID_VALUE).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CallsFake(CUDA_ERROR_ILLEGAL_ADDRESS).code(), absl::StatusCode::kInternal);
}

TEST(CuErrorMacroTest, LogVariantOnlyLogs) {
  testing::internal::CaptureStderr();
  KE_CU_LOG_IF_ERROR(Fake(CUDA_ERROR_LAUNCH_FAILED));
  KE_CU_LOG_IF_ERROR(Fake(CUDA_SUCCESS));
  const std::string logged = testing::internal::GetCapturedStderr();
  EXPECT_NE(logged.find("CUDA_ERROR_LAUNCH_FAILED (719) in Fake(CUDA_ERROR_LAUNCH_FAILED)"),
            std::string::npos)
      << logged;
  EXPECT_EQ(logged.find("CUDA_SUCCESS"), std::string::npos);
}

}  // namespace
}  // namespace kerneleval::cuda
