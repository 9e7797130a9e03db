// The per-user symbol cache: answers of the Symbolizer kept across processes, one file per
// build-id, the way perf's build-id cache (~/.debug/.build-id/xx/rest) and debuginfod's client
// cache keep whole files. Here what is kept is smaller and is what costs the time: resolved
// inline chains by file-relative address (ELF vaddr) range, so a later process asking about
// addresses in the same functions opens no debug info. A range [lo, hi) holds one answer that
// every address in it gets; a sampling profiler meets other instructions of the same hot
// functions on every run, so an answer kept for the sampled address alone would miss again
// (the Symbolizer stores, for each function it resolves, the maximal ranges of identical
// answers over the whole function).
//
// File: DIR/xx/rest for build-id xxrest (lower-case hex). Native byte order (the magic reads
// differently in the other), read with one read(2), validated in full before use (magic,
// version, build-id, sizes, a checksum of the body, ranges sorted and disjoint, every frame
// and string inside its table); a file that fails any check is ignored and replaced by the
// next save.
//
//   header (128 bytes)   magic "inprofSC", version (2), flags, counts, checksum, build-id
//   entries              {u64 lo, u64 hi, u32 first frame, u32 frame count}: [lo, hi),
//                        sorted, disjoint; entries with the same chain share its frames
//   frames               {u32 function, file, comp_dir (string offsets, ~0u: none),
//                         u32 line, column, flags (1: inlined)}, innermost first
//   strings              NUL-terminated, the last byte is a NUL
//
// Version 1 files (one entry per address) fail the version check and are replaced.
//
// Writes merge the file as it is on disk now with what this process resolved, into a
// temporary file in the same directory (mode 0600; directories 0700) renamed over the old
// one: a reader sees the old file or the new one, never a mix; of two concurrent writers
// the last rename wins and the other's new answers are lost until asked for again.
//
// Thread-safety: one instance per Symbolizer, used under its caller's serialisation.
#ifndef INPROF_SYMBOLIZE_SYMBOL_CACHE_H_
#define INPROF_SYMBOLIZE_SYMBOL_CACHE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace inprof::internal {

// A cache file larger than this is neither read nor grown (1,000 addresses spread over all
// of libc, each with its whole function, take 4.8 MiB: a profile meets far fewer functions).
inline constexpr uint64_t kMaxSymbolCacheFileBytes = uint64_t{64} << 20;

// One frame as the Symbolizer caches it: before source paths are canonicalised and remapped
// (that depends on this machine's files and the options, and is redone on every read).
struct CachedFrame {
  const char* function = nullptr;  // final (demangled) name; null: "module+0xoffset" of the
                                   // address read (one entry may cover many)
  const char* file = nullptr;      // as DWARF gives it (may be relative); null: none
  const char* comp_dir = nullptr;  // the compile unit's directory; null: none
  uint32_t line = 0;
  uint32_t column = 0;
  bool inlined = false;
};

// The same frames, field by field, names and files compared as strings. Frames named
// module+0xoffset (function null) are the same here: the text is rebuilt from the address
// each is read for. Not async-signal-safe.
bool SameFrames(const CachedFrame* a, uint32_t a_count, const CachedFrame* b, uint32_t b_count);

class SymbolCacheFile {
 public:
  // `dir`: the cache directory; `build_id`: raw bytes, not empty, at most 64.
  SymbolCacheFile(std::string dir, std::vector<uint8_t> build_id);
  ~SymbolCacheFile();
  SymbolCacheFile(const SymbolCacheFile&) = delete;
  SymbolCacheFile& operator=(const SymbolCacheFile&) = delete;

  // Reads the file once; absent, unreadable or invalid reads as empty. Not
  // async-signal-safe.
  void Load();
  bool loaded() const { return loaded_ != nullptr; }

  // True when the answers on file were made with DWARF (file:line); false when there are
  // none or they were made from symbols only.
  bool made_with_dwarf() const { return loaded_ != nullptr && loaded_->with_dwarf; }

  // Forgets what Load() read (answers made without debug info that is available now); the
  // next Save() replaces the file. Strings handed out by Find() stay valid.
  void DropLoaded();

  // The answer for `vaddr`, innermost frame first: from what Load() read, else from what
  // this object was given with Add() (saved or not). Strings stay valid for this object's
  // lifetime. Not async-signal-safe.
  bool Find(uint64_t vaddr, std::vector<CachedFrame>* frames) const;

  // Keeps `frames` as the answer for every address in [lo, hi) (lo < hi), for Find() at
  // once and for the next Save(). Addresses that already have an answer here keep it: the
  // caller gives each address one answer, the one debug info gives. The strings are not
  // copied (a function's ranges repeat the same few): they must stay valid and unchanged
  // while this object is used, as the Symbolizer's (libdw's and its demangler's) do.
  // `with_dwarf`: the file's debug info was available to make it. Throws std::bad_alloc
  // only.
  void Add(uint64_t lo, uint64_t hi, const std::vector<CachedFrame>& frames, bool with_dwarf);

  // Add() was called since the last Save() that wrote (or gave up on) the answers.
  bool has_pending() const { return dirty_; }

  enum class SaveResult { kNothing, kSaved, kTooLarge, kFailed };
  // Merges the answers given with Add() with the file as it is now (and what Load() read)
  // and replaces it atomically. kFailed (directory or file not writable, disk full) leaves
  // the file as it was and keeps them pending. Not async-signal-safe.
  SaveResult Save();

  // DIR/xx/rest.
  std::string Path() const;

 private:
  // What Add() was given: lo -> {hi, the chain frames_[first, first + count)}, disjoint.
  struct Span {
    uint64_t hi = 0;
    uint32_t first = 0;
    uint32_t count = 0;
  };
  // An answer for [lo, hi) while a file is written: from added_ or from a file's image.
  struct Ref {
    uint64_t lo = 0;
    uint64_t hi = 0;
    const CachedFrame* frames = nullptr;
    uint32_t count = 0;
  };
  const Span* FindSpan(uint64_t vaddr) const;
  // A validated file in memory: the file mapped read-only, or (where it cannot be mapped) an
  // 8-byte aligned copy of it.
  struct Image {
    Image() = default;
    ~Image();
    Image(const Image&) = delete;
    Image& operator=(const Image&) = delete;
    const unsigned char* data = nullptr;
    bool mapped = false;  // data is an mmap of `size` bytes, else new uint64_t[]
    uint64_t size = 0;
    uint64_t entry_count = 0;
    uint64_t frame_count = 0;
    uint64_t strings_size = 0;
    bool with_dwarf = false;
    const unsigned char* bytes() const { return data; }
  };
  std::unique_ptr<Image> Read() const;
  // The image's answers, in order: its frames appended to `pool` (the caller reserved room
  // for them: appending must not reallocate), strings in the image.
  static void Decode(const Image& image, std::vector<CachedFrame>* pool, std::vector<Ref>* out);
  // `base` and the parts of `extra` that `base` does not cover (both sorted, disjoint).
  static std::vector<Ref> MergeUncovered(const std::vector<Ref>& base,
                                         const std::vector<Ref>& extra);
  static bool FindIn(const Image& image, uint64_t vaddr, std::vector<CachedFrame>* frames);

  std::string dir_;
  std::vector<uint8_t> build_id_;
  std::unique_ptr<Image> loaded_;
  std::vector<std::unique_ptr<Image>> dropped_;  // kept: Find() handed out their strings
  std::map<uint64_t, Span> added_;               // every Add() of this object's lifetime
  std::vector<CachedFrame> frames_;              // their chains
  bool dirty_ = false;  // added_ holds answers no Save() has written or given up on
  bool added_with_dwarf_ = true;
};

// The checksum in a cache file's header, of everything after the header. Exposed for tests.
uint64_t SymbolCacheChecksum(const unsigned char* data, uint64_t size);

// The hex form of a build-id.
std::string BuildIdHex(const std::vector<uint8_t>& build_id);

// Creates `path` and its missing parents with mode 0700. False when it cannot be created.
bool MakeDirectories(const std::string& path);

}  // namespace inprof::internal

#endif  // INPROF_SYMBOLIZE_SYMBOL_CACHE_H_
