#include "evaluator/cpu/remote_pages.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace kerneleval::cpu {
namespace {

constexpr size_t kPage = 4096;
constexpr size_t kPages = 16;

// A child that maps kPages pages, writes 0xab over pages 1, 3 and 8 (the
// others never touched), makes page 8 inaccessible where `protect_one` is
// set, and stops itself: as a runner stands still between runs.
class StoppedChild {
 public:
  explicit StoppedChild(bool protect_one) {
    // Mapped before fork: the child's copy lies at the same address.
    void* memory =
        ::mmap(nullptr, kPages * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT_NE(memory, MAP_FAILED);
    base_ = static_cast<char*>(memory);
    pid_ = ::fork();
    if (pid_ == 0) {
      for (size_t page : {1, 3, 8}) std::memset(base_ + page * kPage, 0xab, kPage);
      if (protect_one) ::mprotect(base_ + 8 * kPage, kPage, PROT_NONE);
      ::raise(SIGSTOP);
      ::pause();
      ::_exit(0);
    }
    int status = 0;
    ::waitpid(pid_, &status, WUNTRACED);
    EXPECT_TRUE(WIFSTOPPED(status));
  }
  ~StoppedChild() {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    ::munmap(base_, kPages * kPage);
  }
  pid_t pid() const { return pid_; }
  uint64_t address(size_t page) const { return reinterpret_cast<uint64_t>(base_ + page * kPage); }

  // Page `page` of the child, as its bytes.
  std::vector<unsigned char> Read(size_t page) const {
    std::vector<unsigned char> bytes(kPage);
    iovec local{bytes.data(), kPage};
    iovec remote{base_ + page * kPage, kPage};
    EXPECT_EQ(::process_vm_readv(pid_, &local, 1, &remote, 1, 0), static_cast<ssize_t>(kPage));
    return bytes;
  }

 private:
  char* base_ = nullptr;
  pid_t pid_ = -1;
};

TEST(RemotePagesTest, ZerosTheTouchedPagesOnlyAndLeavesTheRestWithoutMemory) {
  StoppedChild child(/*protect_one=*/false);
  const AddressRange range{child.address(0), child.address(kPages)};
  absl::StatusOr<uint64_t> zeroed = ZeroTouchedPages(child.pid(), {&range, 1}, kPages * kPage);
  ASSERT_TRUE(zeroed.ok()) << zeroed.status();
  // The three pages written, and no other: reading an untouched page would
  // have given it memory.
  EXPECT_EQ(*zeroed, 3u);
  for (size_t page : {1, 3, 8}) {
    const std::vector<unsigned char> bytes = child.Read(page);
    EXPECT_EQ(std::count(bytes.begin(), bytes.end(), 0), static_cast<long>(kPage)) << page;
  }
  // A second pass finds the same three pages (zeroed, still resident).
  absl::StatusOr<uint64_t> again = ZeroTouchedPages(child.pid(), {&range, 1}, kPages * kPage);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, 3u);
}

TEST(RemotePagesTest, RefusesRangesItWasNotMeantToTouch) {
  StoppedChild child(/*protect_one=*/false);
  const AddressRange unaligned{child.address(0) + 8, child.address(2)};
  EXPECT_FALSE(ZeroTouchedPages(child.pid(), {&unaligned, 1}, kPages * kPage).ok());
  const AddressRange reversed{child.address(2), child.address(0)};
  EXPECT_FALSE(ZeroTouchedPages(child.pid(), {&reversed, 1}, kPages * kPage).ok());
  // More in all than the bound, however it is split.
  const AddressRange halves[] = {{child.address(0), child.address(8)},
                                 {child.address(8), child.address(kPages)}};
  EXPECT_FALSE(ZeroTouchedPages(child.pid(), halves, kPages * kPage - kPage).ok());
  EXPECT_TRUE(ZeroTouchedPages(child.pid(), halves, kPages * kPage).ok());
}

// A range over memory the process shares (its buffers, mapped from the
// worker's memfd) is refused: zeroing it would wipe the poison the worker
// wrote into its outputs.
TEST(RemotePagesTest, RefusesMemoryTheProcessShares) {
  void* shared =
      ::mmap(nullptr, 4 * kPage, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(shared, MAP_FAILED);
  std::memset(shared, 0xab, 4 * kPage);
  StoppedChild child(/*protect_one=*/false);  // inherits the shared mapping
  const auto begin = reinterpret_cast<uint64_t>(shared);
  const AddressRange range{begin, begin + 4 * kPage};
  absl::StatusOr<uint64_t> zeroed = ZeroTouchedPages(child.pid(), {&range, 1}, 4 * kPage);
  EXPECT_FALSE(zeroed.ok());
  EXPECT_EQ(static_cast<unsigned char*>(shared)[kPage], 0xab);
  // With a private range beside it: refused as a whole, nothing zeroed.
  const AddressRange both[] = {{child.address(0), child.address(kPages)}, range};
  EXPECT_FALSE(ZeroTouchedPages(child.pid(), both, (kPages + 4) * kPage).ok());
  EXPECT_EQ(child.Read(1)[0], 0xab);
  ::munmap(shared, 4 * kPage);
}

// A page with memory that the process made inaccessible cannot be zeroed:
// an error, not a page silently kept (sweep 41 planted a trap so).
TEST(RemotePagesTest, APageMadeInaccessibleIsAnError) {
  StoppedChild child(/*protect_one=*/true);
  const AddressRange range{child.address(0), child.address(kPages)};
  absl::StatusOr<uint64_t> zeroed = ZeroTouchedPages(child.pid(), {&range, 1}, kPages * kPage);
  EXPECT_FALSE(zeroed.ok());
}

}  // namespace
}  // namespace kerneleval::cpu
