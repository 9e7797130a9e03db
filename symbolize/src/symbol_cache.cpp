// The per-user symbol cache file (symbol_cache.h) and its default directory.
#include "symbol_cache.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "inprof/symbolize.h"

namespace inprof::internal {
namespace {

constexpr char kMagic[8] = {'i', 'n', 'p', 'r', 'o', 'f', 'S', 'C'};
constexpr uint32_t kVersion = 2;          // 1: one entry per address, without ranges
constexpr uint32_t kWithDwarf = 1;        // header flag
constexpr uint32_t kInlined = 1;          // frame flag
constexpr uint32_t kNone = ~uint32_t{0};  // string offset: no string
constexpr size_t kMaxBuildId = 64;

struct Header {
  char magic[8];
  uint32_t version;
  uint32_t flags;
  uint64_t entry_count;
  uint64_t frame_count;
  uint64_t strings_size;
  uint64_t checksum;  // of everything after the header
  uint32_t build_id_size;
  uint8_t build_id[kMaxBuildId];
  uint8_t reserved[12];
};
static_assert(sizeof(Header) == 128);

struct Entry {
  uint64_t lo;
  uint64_t hi;  // exclusive
  uint32_t first_frame;
  uint32_t frame_count;
};
static_assert(sizeof(Entry) == 24);

struct Frame {
  uint32_t function;
  uint32_t file;
  uint32_t comp_dir;
  uint32_t line;
  uint32_t column;
  uint32_t flags;
};
static_assert(sizeof(Frame) == 24);

template <typename T>
T ReadAs(const unsigned char* p) {
  T value;
  std::memcpy(&value, p, sizeof value);
  return value;
}

}  // namespace

// FNV-1a over 8-byte words (then the tail bytes): a torn or bit-flipped file is what it
// guards against, not an adversary, and a word at a time keeps a 1 MB file under 0.2 ms.
uint64_t SymbolCacheChecksum(const unsigned char* data, uint64_t size) {
  uint64_t h = 0xcbf29ce484222325ull;
  uint64_t i = 0;
  for (; i + 8 <= size; i += 8) h = (h ^ ReadAs<uint64_t>(data + i)) * 0x100000001b3ull;
  for (; i < size; ++i) h = (h ^ data[i]) * 0x100000001b3ull;
  return h;
}

namespace {

bool ReadAll(int fd, unsigned char* out, uint64_t size) {
  uint64_t done = 0;
  while (done < size) {
    const ssize_t n = read(fd, out + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<uint64_t>(n);
  }
  return true;
}

bool WriteAll(int fd, const char* data, size_t size) {
  size_t done = 0;
  while (done < size) {
    const ssize_t n = write(fd, data + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// Builds the string table while frames are written: each distinct string once. The same
// few strings come back for every range of a function, mostly at the same address: those
// are found without hashing their text.
class StringTable {
 public:
  uint32_t Add(const char* s) {
    if (s == nullptr) return kNone;
    auto [known, new_pointer] = by_pointer_.try_emplace(s, 0);
    if (!new_pointer) return known->second;
    auto [it, inserted] = offsets_.try_emplace(s, static_cast<uint32_t>(data_.size()));
    if (inserted) data_.append(s, std::strlen(s) + 1);
    known->second = it->second;
    return it->second;
  }
  const std::string& data() const { return data_; }

 private:
  std::unordered_map<const char*, uint32_t> by_pointer_;
  std::unordered_map<std::string_view, uint32_t> offsets_;  // views of the callers' strings
  std::string data_;
};

}  // namespace

std::string BuildIdHex(const std::vector<uint8_t>& build_id) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(build_id.size() * 2);
  for (uint8_t b : build_id) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

bool MakeDirectories(const std::string& path) {
  std::string dir = path;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  if (dir.empty()) return false;
  struct stat st {};
  if (stat(dir.c_str(), &st) == 0) return S_ISDIR(st.st_mode);
  const size_t slash = dir.rfind('/');
  if (slash != std::string::npos && slash != 0 && !MakeDirectories(dir.substr(0, slash))) {
    return false;
  }
  if (mkdir(dir.c_str(), 0700) == 0) return true;
  return errno == EEXIST && stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

SymbolCacheFile::SymbolCacheFile(std::string dir, std::vector<uint8_t> build_id)
    : dir_(std::move(dir)), build_id_(std::move(build_id)) {}

SymbolCacheFile::~SymbolCacheFile() = default;

SymbolCacheFile::Image::~Image() {
  if (data == nullptr) return;
  if (mapped) {
    munmap(const_cast<unsigned char*>(data), size);
  } else {
    delete[] reinterpret_cast<const uint64_t*>(data);
  }
}

std::string SymbolCacheFile::Path() const {
  const std::string hex = BuildIdHex(build_id_);
  std::string path = dir_;
  if (!path.empty() && path.back() != '/') path += '/';
  path += hex.substr(0, 2);
  path += '/';
  path += hex.substr(2);
  return path;
}

void SymbolCacheFile::Load() { loaded_ = Read(); }

void SymbolCacheFile::DropLoaded() {
  if (loaded_ != nullptr) dropped_.push_back(std::move(loaded_));
}

std::unique_ptr<SymbolCacheFile::Image> SymbolCacheFile::Read() const {
  if (build_id_.empty() || build_id_.size() > kMaxBuildId) return nullptr;
  const int fd = open(Path().c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return nullptr;
  struct stat st {};
  auto image = std::make_unique<Image>();
  bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= 0 &&
            static_cast<uint64_t>(st.st_size) >= sizeof(Header) &&
            static_cast<uint64_t>(st.st_size) <= kMaxSymbolCacheFileBytes;
  if (ok) {
    image->size = static_cast<uint64_t>(st.st_size);
    // Mapped, not read: reading copies the file into fresh anonymous pages, one page fault
    // each, and in a process forked from a threaded one that is most of what a sampled
    // child pays at exit (a 1 MB file: 5.1 ms of CPU read into the heap, 1.6 ms mapped,
    // 1.5 ms without the file; docs/symbolizer.md). Writers never change a file in place
    // (they rename a new one over it), so the mapping keeps the inode it validated.
    void* map = mmap(nullptr, image->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map != MAP_FAILED) {
      image->data = static_cast<const unsigned char*>(map);
      image->mapped = true;
    } else {
      // Not value-initialised: read() fills it, and zeroing megabytes first showed in
      // profiles of warm runs.
      auto* words = new uint64_t[(image->size + 7) / 8];
      image->data = reinterpret_cast<const unsigned char*>(words);
      ok = ReadAll(fd, reinterpret_cast<unsigned char*>(words), image->size);
    }
  }
  close(fd);
  if (!ok) return nullptr;

  // Everything is checked here, once, so that Find() can trust the offsets.
  const unsigned char* bytes = image->bytes();
  const Header header = ReadAs<Header>(bytes);
  if (std::memcmp(header.magic, kMagic, sizeof kMagic) != 0 || header.version != kVersion ||
      header.build_id_size != build_id_.size() ||
      std::memcmp(header.build_id, build_id_.data(), build_id_.size()) != 0) {
    return nullptr;
  }
  const uint64_t limit = kMaxSymbolCacheFileBytes;
  if (header.entry_count > limit / sizeof(Entry) || header.frame_count > limit / sizeof(Frame) ||
      header.strings_size > limit ||
      sizeof(Header) + header.entry_count * sizeof(Entry) + header.frame_count * sizeof(Frame) +
              header.strings_size !=
          image->size ||
      header.frame_count >= kNone) {
    return nullptr;
  }
  if (SymbolCacheChecksum(bytes + sizeof(Header), image->size - sizeof(Header)) !=
      header.checksum) {
    return nullptr;
  }
  image->entry_count = header.entry_count;
  image->frame_count = header.frame_count;
  image->strings_size = header.strings_size;
  image->with_dwarf = (header.flags & kWithDwarf) != 0;
  const unsigned char* entries = bytes + sizeof(Header);
  const unsigned char* frames = entries + image->entry_count * sizeof(Entry);
  const unsigned char* strings = frames + image->frame_count * sizeof(Frame);
  if (image->strings_size != 0 && strings[image->strings_size - 1] != '\0') return nullptr;
  uint64_t previous_hi = 0;
  for (uint64_t i = 0; i < image->entry_count; ++i) {
    const Entry e = ReadAs<Entry>(entries + i * sizeof(Entry));
    if (e.lo >= e.hi || (i != 0 && e.lo < previous_hi) || e.frame_count == 0 ||
        e.first_frame > image->frame_count || e.frame_count > image->frame_count - e.first_frame) {
      return nullptr;
    }
    previous_hi = e.hi;
  }
  for (uint64_t i = 0; i < image->frame_count; ++i) {
    const Frame f = ReadAs<Frame>(frames + i * sizeof(Frame));
    for (uint32_t s : {f.function, f.file, f.comp_dir}) {
      if (s != kNone && s >= image->strings_size) return nullptr;
    }
  }
  return image;
}

bool SymbolCacheFile::FindIn(const Image& image, uint64_t vaddr, std::vector<CachedFrame>* out) {
  const unsigned char* entries = image.bytes() + sizeof(Header);
  const unsigned char* frames = entries + image.entry_count * sizeof(Entry);
  const char* strings = reinterpret_cast<const char*>(frames + image.frame_count * sizeof(Frame));
  // The last entry starting at or below vaddr; entries are disjoint, so no other can hold it.
  uint64_t lo = 0;
  uint64_t hi = image.entry_count;
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (ReadAs<uint64_t>(entries + mid * sizeof(Entry)) <= vaddr) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo == 0) return false;
  const Entry e = ReadAs<Entry>(entries + (lo - 1) * sizeof(Entry));
  if (vaddr >= e.hi) return false;
  out->clear();
  for (uint32_t i = 0; i < e.frame_count; ++i) {
    const Frame f = ReadAs<Frame>(frames + (uint64_t{e.first_frame} + i) * sizeof(Frame));
    CachedFrame& c = out->emplace_back();
    c.function = f.function == kNone ? nullptr : strings + f.function;
    c.file = f.file == kNone ? nullptr : strings + f.file;
    c.comp_dir = f.comp_dir == kNone ? nullptr : strings + f.comp_dir;
    c.line = f.line;
    c.column = f.column;
    c.inlined = (f.flags & kInlined) != 0;
  }
  return true;
}

bool SymbolCacheFile::Find(uint64_t vaddr, std::vector<CachedFrame>* frames) const {
  if (loaded_ != nullptr && FindIn(*loaded_, vaddr, frames)) return true;
  const Span* span = FindSpan(vaddr);
  if (span == nullptr) return false;
  frames->assign(frames_.begin() + span->first, frames_.begin() + span->first + span->count);
  return true;
}

const SymbolCacheFile::Span* SymbolCacheFile::FindSpan(uint64_t vaddr) const {
  auto it = added_.upper_bound(vaddr);
  if (it == added_.begin()) return nullptr;
  --it;
  return vaddr < it->second.hi ? &it->second : nullptr;
}

void SymbolCacheFile::Add(uint64_t lo, uint64_t hi, const std::vector<CachedFrame>& frames,
                          bool with_dwarf) {
  if (frames.empty() || lo >= hi || frames.size() > UINT32_MAX ||
      frames_.size() > UINT32_MAX - frames.size()) {
    return;
  }
  if (added_.empty()) {
    added_with_dwarf_ = with_dwarf;
  } else if (added_with_dwarf_ != with_dwarf) {
    return;  // the file's debug info changed under us: keep the first kind only
  }
  const Span chain{0, static_cast<uint32_t>(frames_.size()), static_cast<uint32_t>(frames.size())};
  bool used = false;
  // The parts of [lo, hi) nothing covers yet.
  for (uint64_t at = lo; at < hi;) {
    if (const Span* span = FindSpan(at)) {
      at = span->hi;
      continue;
    }
    auto next = added_.upper_bound(at);
    const uint64_t end = next == added_.end() ? hi : std::min(hi, next->first);
    added_.emplace_hint(next, at, Span{end, chain.first, chain.count});
    used = true;
    at = end;
  }
  if (!used) return;
  frames_.insert(frames_.end(), frames.begin(), frames.end());
  dirty_ = true;
}

void SymbolCacheFile::Decode(const Image& image, std::vector<CachedFrame>* pool,
                             std::vector<Ref>* out) {
  const unsigned char* entries = image.bytes() + sizeof(Header);
  const unsigned char* frames = entries + image.entry_count * sizeof(Entry);
  const char* strings = reinterpret_cast<const char*>(frames + image.frame_count * sizeof(Frame));
  const auto string = [strings](uint32_t offset) {
    return offset == kNone ? nullptr : strings + offset;
  };
  const CachedFrame* base = pool->data() + pool->size();  // never reallocates: reserved
  for (uint64_t i = 0; i < image.frame_count; ++i) {
    const Frame f = ReadAs<Frame>(frames + i * sizeof(Frame));
    pool->push_back(CachedFrame{string(f.function), string(f.file), string(f.comp_dir), f.line,
                                f.column, (f.flags & kInlined) != 0});
  }
  out->reserve(out->size() + image.entry_count);
  for (uint64_t i = 0; i < image.entry_count; ++i) {
    const Entry e = ReadAs<Entry>(entries + i * sizeof(Entry));
    out->push_back(Ref{e.lo, e.hi, base + e.first_frame, e.frame_count});
  }
}

std::vector<SymbolCacheFile::Ref> SymbolCacheFile::MergeUncovered(const std::vector<Ref>& base,
                                                                  const std::vector<Ref>& extra) {
  std::vector<Ref> uncovered;
  size_t j = 0;
  for (const Ref& e : extra) {
    while (j < base.size() && base[j].hi <= e.lo) ++j;
    uint64_t at = e.lo;
    for (size_t k = j; at < e.hi;) {
      if (k < base.size() && base[k].lo <= at) {
        at = base[k++].hi;  // covered up to there
        continue;
      }
      const uint64_t end = k < base.size() ? std::min(e.hi, base[k].lo) : e.hi;
      uncovered.push_back(Ref{at, end, e.frames, e.count});
      at = end;
    }
  }
  std::vector<Ref> out(base.size() + uncovered.size());
  std::merge(base.begin(), base.end(), uncovered.begin(), uncovered.end(), out.begin(),
             [](const Ref& a, const Ref& b) { return a.lo < b.lo; });
  return out;
}

namespace {

bool SameString(const char* a, const char* b) {
  return a == b || (a != nullptr && b != nullptr && std::strcmp(a, b) == 0);
}

}  // namespace

bool SameFrames(const CachedFrame* a, uint32_t a_count, const CachedFrame* b, uint32_t b_count) {
  if (a_count != b_count) return false;
  for (uint32_t i = 0; i < a_count; ++i) {
    if (!SameString(a[i].function, b[i].function) || !SameString(a[i].file, b[i].file) ||
        !SameString(a[i].comp_dir, b[i].comp_dir) || a[i].line != b[i].line ||
        a[i].column != b[i].column || a[i].inlined != b[i].inlined) {
      return false;
    }
  }
  return true;
}


SymbolCacheFile::SaveResult SymbolCacheFile::Save() {
  if (!dirty_) return SaveResult::kNothing;
  if (build_id_.empty() || build_id_.size() > kMaxBuildId) {
    dirty_ = false;
    return SaveResult::kNothing;
  }
  // Ours, then what is on disk now (other processes may have added answers since Load),
  // then what Load() read; an address keeps the first answer met. Answers of the other
  // kind (with vs without DWARF) are not mixed: ours replace a file made without DWARF;
  // ours made without DWARF are not written over one made with it.
  std::vector<Ref> merged;
  merged.reserve(added_.size());
  for (const auto& [lo, span] : added_) {
    merged.push_back(Ref{lo, span.hi, frames_.data() + span.first, span.count});
  }
  const std::unique_ptr<Image> disk = Read();
  std::vector<CachedFrame> pool;  // the images' frames, decoded
  uint64_t pool_size = 0;
  for (const Image* image : {disk.get(), loaded_.get()}) {
    if (image == nullptr) continue;
    if (image->with_dwarf != added_with_dwarf_) {
      if (image->with_dwarf) {
        dirty_ = false;
        return SaveResult::kNothing;
      }
      continue;
    }
    pool_size += image->frame_count;
  }
  pool.reserve(pool_size);
  for (const Image* image : {disk.get(), loaded_.get()}) {
    if (image == nullptr || image->with_dwarf != added_with_dwarf_) continue;
    std::vector<Ref> decoded;
    Decode(*image, &pool, &decoded);
    merged = MergeUncovered(merged, decoded);
  }
  // Neighbours with the same answer (an address cached alone next to its function's
  // range, ranges from two processes) become one entry.
  size_t kept = 0;
  for (const Ref& r : merged) {
    if (kept > 0 && merged[kept - 1].hi == r.lo &&
        SameFrames(merged[kept - 1].frames, merged[kept - 1].count, r.frames, r.count)) {
      merged[kept - 1].hi = r.hi;
    } else {
      merged[kept++] = r;
    }
  }
  merged.resize(kept);

  StringTable strings;
  std::string entries;
  std::string frames;
  entries.reserve(merged.size() * sizeof(Entry));
  // A chain is written once and shared by every entry with that answer (a line met again
  // further down its function).
  std::unordered_map<std::string, uint32_t> chains;
  std::string chain;
  uint64_t frame_count = 0;
  for (const Ref& r : merged) {
    chain.clear();
    for (uint32_t i = 0; i < r.count; ++i) {
      const CachedFrame& c = r.frames[i];
      const Frame f{
          strings.Add(c.function), strings.Add(c.file), strings.Add(c.comp_dir), c.line, c.column,
          c.inlined ? kInlined : 0};
      chain.append(reinterpret_cast<const char*>(&f), sizeof f);
    }
    auto [known, inserted] = chains.try_emplace(chain, static_cast<uint32_t>(frame_count));
    if (inserted) {
      frames += chain;
      frame_count += r.count;
    }
    const Entry e{r.lo, r.hi, known->second, r.count};
    entries.append(reinterpret_cast<const char*>(&e), sizeof e);
    if (sizeof(Header) + entries.size() + frames.size() + strings.data().size() >
        kMaxSymbolCacheFileBytes) {
      dirty_ = false;
      return SaveResult::kTooLarge;
    }
  }
  Header header{};
  std::memcpy(header.magic, kMagic, sizeof kMagic);
  header.version = kVersion;
  header.flags = added_with_dwarf_ ? kWithDwarf : 0;
  header.entry_count = merged.size();
  header.frame_count = frame_count;
  header.strings_size = strings.data().size();
  header.build_id_size = static_cast<uint32_t>(build_id_.size());
  std::memcpy(header.build_id, build_id_.data(), build_id_.size());
  std::string body = std::move(entries);
  body += frames;
  body += strings.data();
  header.checksum =
      SymbolCacheChecksum(reinterpret_cast<const unsigned char*>(body.data()), body.size());

  const std::string path = Path();
  const std::string dir = path.substr(0, path.rfind('/'));
  if (!MakeDirectories(dir)) return SaveResult::kFailed;
  std::string temp = path + ".XXXXXX";
  const int fd = mkostemp(temp.data(), O_CLOEXEC);  // mode 0600
  if (fd < 0) return SaveResult::kFailed;
  const bool written = WriteAll(fd, reinterpret_cast<const char*>(&header), sizeof header) &&
                       WriteAll(fd, body.data(), body.size());
  if (close(fd) != 0 || !written || rename(temp.c_str(), path.c_str()) != 0) {
    unlink(temp.c_str());
    return SaveResult::kFailed;
  }
  dirty_ = false;
  return SaveResult::kSaved;
}

}  // namespace inprof::internal

namespace inprof {

std::string DefaultSymbolCacheDir() {
  const char* forced = secure_getenv("INPROF_SYMBOL_CACHE");
  if (forced != nullptr && forced[0] != '\0') {
    const std::string_view value(forced);
    if (value == "off" || value == "0") return {};
    return std::string(value);
  }
  // The XDG base directory specification ignores relative values.
  const char* xdg = secure_getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && xdg[0] == '/') return std::string(xdg) + "/inprof/symbols";
  const char* home = secure_getenv("HOME");
  if (home != nullptr && home[0] == '/') return std::string(home) + "/.cache/inprof/symbols";
  return {};
}

}  // namespace inprof
