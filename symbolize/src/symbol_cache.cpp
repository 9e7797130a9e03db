// The per-user symbol cache file (internal/symbol_cache.h) and its default directory.
#include "internal/symbol_cache.h"

#include <fcntl.h>
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
constexpr uint32_t kVersion = 1;
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
  uint64_t vaddr;
  uint32_t first_frame;
  uint32_t frame_count;
};
static_assert(sizeof(Entry) == 16);

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

// Builds the string table while frames are written: each distinct string once.
class StringTable {
 public:
  uint32_t Add(bool present, const std::string& s) {
    if (!present) return kNone;
    auto [it, inserted] = offsets_.try_emplace(s, static_cast<uint32_t>(data_.size()));
    if (inserted) data_.append(s.c_str(), s.size() + 1);
    return it->second;
  }
  const std::string& data() const { return data_; }

 private:
  std::unordered_map<std::string, uint32_t> offsets_;
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
    image->words = std::make_unique<uint64_t[]>((image->size + 7) / 8);
    ok = ReadAll(fd, reinterpret_cast<unsigned char*>(image->words.get()), image->size);
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
  uint64_t previous = 0;
  for (uint64_t i = 0; i < image->entry_count; ++i) {
    const Entry e = ReadAs<Entry>(entries + i * sizeof(Entry));
    if ((i != 0 && e.vaddr <= previous) || e.frame_count == 0 ||
        e.first_frame > image->frame_count || e.frame_count > image->frame_count - e.first_frame) {
      return nullptr;
    }
    previous = e.vaddr;
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
  uint64_t lo = 0;
  uint64_t hi = image.entry_count;
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (ReadAs<uint64_t>(entries + mid * sizeof(Entry)) < vaddr) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo == image.entry_count) return false;
  const Entry e = ReadAs<Entry>(entries + lo * sizeof(Entry));
  if (e.vaddr != vaddr) return false;
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
  return loaded_ != nullptr && FindIn(*loaded_, vaddr, frames);
}

void SymbolCacheFile::Decode(const Image& image, std::map<uint64_t, std::vector<Owned>>* out) {
  const unsigned char* entries = image.bytes() + sizeof(Header);
  std::vector<CachedFrame> frames;
  for (uint64_t i = 0; i < image.entry_count; ++i) {
    const uint64_t vaddr = ReadAs<uint64_t>(entries + i * sizeof(Entry));
    if (!FindIn(image, vaddr, &frames)) continue;
    auto [it, inserted] = out->try_emplace(vaddr);
    if (!inserted) continue;
    for (const CachedFrame& c : frames) {
      Owned& o = it->second.emplace_back();
      o.has_function = c.function != nullptr;
      o.has_file = c.file != nullptr;
      o.has_comp_dir = c.comp_dir != nullptr;
      if (o.has_function) o.function = c.function;
      if (o.has_file) o.file = c.file;
      if (o.has_comp_dir) o.comp_dir = c.comp_dir;
      o.line = c.line;
      o.column = c.column;
      o.inlined = c.inlined;
    }
  }
}

void SymbolCacheFile::Add(uint64_t vaddr, const std::vector<CachedFrame>& frames, bool with_dwarf) {
  if (frames.empty()) return;
  if (pending_.empty()) {
    pending_with_dwarf_ = with_dwarf;
  } else if (pending_with_dwarf_ != with_dwarf) {
    return;  // the file's debug info changed under us: keep the first kind only
  }
  std::vector<Owned>& out = pending_[vaddr];
  out.clear();
  for (const CachedFrame& c : frames) {
    Owned& o = out.emplace_back();
    o.has_function = c.function != nullptr;
    o.has_file = c.file != nullptr;
    o.has_comp_dir = c.comp_dir != nullptr;
    if (o.has_function) o.function = c.function;
    if (o.has_file) o.file = c.file;
    if (o.has_comp_dir) o.comp_dir = c.comp_dir;
    o.line = c.line;
    o.column = c.column;
    o.inlined = c.inlined;
  }
}

SymbolCacheFile::SaveResult SymbolCacheFile::Save() {
  if (pending_.empty()) return SaveResult::kNothing;
  if (build_id_.empty() || build_id_.size() > kMaxBuildId) {
    pending_.clear();
    return SaveResult::kNothing;
  }
  // What is on disk now (other processes may have added answers since Load), what Load()
  // read, then ours. Answers of the other kind (with vs without DWARF) are not mixed: ours
  // replace a file made without DWARF; ours made without DWARF are not written over one
  // made with it.
  std::map<uint64_t, std::vector<Owned>> merged;
  const std::unique_ptr<Image> disk = Read();
  for (const Image* image : {disk.get(), loaded_.get()}) {
    if (image == nullptr) continue;
    if (image->with_dwarf != pending_with_dwarf_) {
      if (image->with_dwarf) {
        pending_.clear();
        return SaveResult::kNothing;
      }
      continue;
    }
    Decode(*image, &merged);
  }
  for (auto& [vaddr, frames] : pending_) merged[vaddr] = frames;

  StringTable strings;
  std::string entries;
  std::string frames;
  entries.reserve(merged.size() * sizeof(Entry));
  uint64_t frame_count = 0;
  for (const auto& [vaddr, chain] : merged) {
    const Entry e{vaddr, static_cast<uint32_t>(frame_count), static_cast<uint32_t>(chain.size())};
    entries.append(reinterpret_cast<const char*>(&e), sizeof e);
    for (const Owned& o : chain) {
      const Frame f{strings.Add(o.has_function, o.function),
                    strings.Add(o.has_file, o.file),
                    strings.Add(o.has_comp_dir, o.comp_dir),
                    o.line,
                    o.column,
                    o.inlined ? kInlined : 0};
      frames.append(reinterpret_cast<const char*>(&f), sizeof f);
      ++frame_count;
    }
    if (sizeof(Header) + entries.size() + frames.size() + strings.data().size() >
        kMaxSymbolCacheFileBytes) {
      pending_.clear();
      return SaveResult::kTooLarge;
    }
  }
  Header header{};
  std::memcpy(header.magic, kMagic, sizeof kMagic);
  header.version = kVersion;
  header.flags = pending_with_dwarf_ ? kWithDwarf : 0;
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
  pending_.clear();
  return SaveResult::kSaved;
}

}  // namespace inprof::internal

namespace inprof {

std::string DefaultSymbolCacheDir() {
  const char* forced = std::getenv("INPROF_SYMBOL_CACHE");
  if (forced != nullptr && forced[0] != '\0') {
    const std::string_view value(forced);
    if (value == "off" || value == "0") return {};
    return std::string(value);
  }
  // The XDG base directory specification ignores relative values.
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && xdg[0] == '/') return std::string(xdg) + "/inprof/symbols";
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] == '/') return std::string(home) + "/.cache/inprof/symbols";
  return {};
}

}  // namespace inprof
