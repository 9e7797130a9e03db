// Load progress on stderr (progress.h).
#include "progress.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace inprof::viewer {
namespace {

constexpr uint64_t kLargeFile = 32ull << 20;
constexpr auto kDelay = std::chrono::milliseconds(500);
constexpr auto kRefresh = std::chrono::milliseconds(250);

bool Forced() {
  const char* value = std::getenv("INPROF_PROGRESS");
  return value && std::strcmp(value, "1") == 0;
}

}  // namespace

bool ProgressAllowed() {
  const char* value = std::getenv("INPROF_PROGRESS");
  if (value && std::strcmp(value, "0") == 0) return false;
  return Forced() || isatty(STDERR_FILENO) == 1;
}

Progress::Progress(std::string path, uint64_t size, bool enabled)
    : path_(std::move(path)), size_(size) {
  if (enabled) thread_ = std::thread([this] { Run(); });
}

Progress::~Progress() {
  if (!thread_.joinable()) return;
  {
    MutexLock lock(&mutex_);
    stop_ = true;
  }
  wake_.NotifyAll();
  thread_.join();
  // Erase the line so the command's own output starts on a clean one.
  if (drawn_) std::fputs("\r\033[K", stderr);
}

void Progress::Run() {
  const auto start = std::chrono::steady_clock::now();
  const bool at_once = Forced() || size_ > kLargeFile;
  MutexLock lock(&mutex_);
  // Until stop_ or the time is up (condition_variable::wait_for with a predicate).
  auto wait = [this](std::chrono::steady_clock::time_point deadline) REQUIRES(mutex_) {
    while (!stop_ && wake_.WaitUntil(&mutex_, deadline)) {
    }
    return stop_;
  };
  if (!at_once && wait(std::chrono::steady_clock::now() + kDelay)) return;
  while (true) {
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    Draw(elapsed.count());
    if (wait(std::chrono::steady_clock::now() + kRefresh)) return;
  }
}

void Progress::Draw(double seconds) {
  const double mb = static_cast<double>(size_) / (1 << 20);
  if (parsing_.load(std::memory_order_relaxed)) {
    std::fprintf(stderr, "\r\033[Kinprof: parsing %s (%.0f MB) %.1f s", path_.c_str(), mb, seconds);
  } else {
    const uint64_t read = read_.load(std::memory_order_relaxed);
    const double percent = size_ > 0 ? 100.0 * static_cast<double>(read) / size_ : 0;
    std::fprintf(stderr, "\r\033[Kinprof: reading %s: %.0f%% of %.0f MB", path_.c_str(), percent,
                 mb);
  }
  std::fflush(stderr);
  drawn_ = true;
}

}  // namespace inprof::viewer
