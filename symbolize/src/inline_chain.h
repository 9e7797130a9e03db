// DWARF resolution of one address to its inline chain, with the results `eu-addr2line -i`
// gives, at a fraction of the cost.
//
// eu-addr2line finds the scopes with dwarf_getscopes (a walk over the whole CU, every
// top-level DIE tested with dwarf_haspc), then walks the CU again with dwarf_getscopes_die
// to get the concrete parent chain: ~3 ms per address on a test binary with large C++ CUs.
// Here each CU's functions are indexed once by address range, and each function's nested
// code scopes (lexical blocks, inlined instances) once when first needed; a lookup is a
// binary search plus a walk over a few in-memory nodes, with no DIE parsing.
#ifndef INPROF_SYMBOLIZE_INLINE_CHAIN_H_
#define INPROF_SYMBOLIZE_INLINE_CHAIN_H_

#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace inprof::internal {

// The DIE tags of scopes that can contain code (DW_TAG_lexical_block, inlined and
// ordinary subprograms, ...), as in libdw's own scope walk: the scope trees of the
// InlineResolver and the cache's extents (cache_ranges.cpp) descend through these.
// Not async-signal-safe.
bool IsCodeScope(int tag);

// One frame as DWARF describes it. Strings point into libdw's data and stay valid while
// the Dwfl does.
struct DwarfFrame {
  const char* function = nullptr;  // linkage name if any, else DW_AT_name; null if unnamed
  const char* file = nullptr;      // as in the line table / DW_AT_call_file; may be relative
  const char* comp_dir = nullptr;  // DW_AT_comp_dir of the CU, for relative `file`
  uint32_t line = 0;
  uint32_t column = 0;
  uint32_t discriminator = 0;  // the line table row's; the innermost frame only
  bool inlined = false;
  bool linkage_name = false;        // `function` is a (mangled) linkage name, not DW_AT_name
  bool unmangled_language = false;  // the CU's language does not mangle names (C, asm, ...)
  uint64_t entry = 0;               // absolute start of the scope's first address range; 0 if none
  const void* scope = nullptr;      // identifies the function or inlined instance (its DIE)
};

// Resolves addresses of one module. Not thread-safe; not async-signal-safe.
class InlineResolver {
 public:
  // Which function DIE an address belongs to when several contain it (assembler aliases:
  // GNU as emits one DW_TAG_subprogram per symbol, memcpy and memmove with one range).
  enum class Overlap {
    kFirstDie,          // libdw's dwarf_getscopes, eu-addr2line
    kSmallestThenLast,  // binutils' bfd and llvm-symbolizer
  };
  explicit InlineResolver(Dwfl_Module* module, Overlap overlap = Overlap::kFirstDie)
      : module_(module), overlap_(overlap) {}

  // Appends the frames for `address` (absolute), innermost first: the innermost frame gets
  // the line table's file:line:column, each DW_TAG_inlined_subroutine contributes a frame
  // named after its abstract origin, and the frame outside it gets the inlined instance's
  // DW_AT_call_file/line/column. The chain ends at the DW_TAG_subprogram (inlined=false).
  // When no function encloses the address (assembly CUs) the last frame has function null.
  // Returns false, appending nothing, when no CU with DWARF actually covers the address.
  // Throws std::bad_alloc only.
  bool Resolve(uint64_t address, std::vector<DwarfFrame>* frames);

 private:
  // DIEs (functions of a CU, or the CUs of a module) by address range.
  struct DieRange {
    Dwarf_Addr low;
    Dwarf_Addr high;      // exclusive
    Dwarf_Addr max_high;  // max(high) over this and all earlier entries (sorted by low)
    uint32_t order;       // DIE order: the first of overlapping DIEs wins
    Dwarf_Die die;
  };
  using RangeIndex = std::vector<DieRange>;

  // A function's code scopes: nodes[0] is the function, children in DIE order.
  struct ScopeTree {
    struct Node {
      Dwarf_Die die;
      int tag;
      uint32_t first_range, range_count;  // into ranges
      uint32_t first_child, child_count;  // into children
      bool described = false;             // the fields below are filled in
      const char* name = nullptr;
      bool linkage_name = false;
      const char* call_file = nullptr;
      uint32_t call_line = 0;
      uint32_t call_column = 0;
    };
    std::vector<Node> nodes;
    std::vector<std::pair<Dwarf_Addr, Dwarf_Addr>> ranges;
    std::vector<uint32_t> children;
  };

  // What a lookup needs of its CU, read once: libdw re-reads DIE attributes (and the CU's
  // range list for dwarf_haspc) on every call, which showed in profiles of libc lookups.
  struct CuInfo {
    RangeIndex functions;
    std::vector<std::pair<Dwarf_Addr, Dwarf_Addr>> ranges;  // the CU's own, disjoint, sorted
    const char* comp_dir = nullptr;
    bool unmangled = false;  // language without mangling (C, assembler, ...)
    // The line table's row addresses, in row order, built on the first line lookup: a
    // binary search over 8-byte keys touches far fewer cache lines than libdw's search
    // over its row structs, which was the largest single cost of a libc lookup.
    bool lines_built = false;
    Dwarf_Lines* lines = nullptr;
    std::vector<Dwarf_Addr> line_addrs;
  };

  static Dwarf_Line* LineFor(Dwarf_Die* cudie, CuInfo* info, Dwarf_Addr pc);

  CuInfo& InfoFor(Dwarf_Die* cudie);
  static bool Covers(const CuInfo& info, Dwarf_Addr pc);
  static void Collect(Dwarf_Die* parent, int depth, RangeIndex* index);
  static void Finish(RangeIndex* index);
  static bool Find(const RangeIndex& index, Dwarf_Addr pc, Overlap overlap, Dwarf_Die* out);
  Dwarf_Die* FindCuWithoutAranges(uint64_t address, Dwarf_Addr* bias);
  ScopeTree& TreeFor(const Dwarf_Die& function);
  static uint32_t AddNode(ScopeTree* tree, Dwarf_Die die, int tag);
  static void Expand(ScopeTree* tree, uint32_t node, int depth);
  void Describe(ScopeTree::Node* node, Dwarf_Die* cudie);
  static uint64_t EntryOf(const ScopeTree& tree, const ScopeTree::Node& node, Dwarf_Addr bias);

  Dwfl_Module* module_;
  Overlap overlap_;
  // libdwfl 0.188 finds CUs only through .debug_aranges, which clang does not emit by
  // default (-gdwarf-aranges): for such modules we index the CUs' own address ranges.
  enum class Aranges { kUnknown, kPresent, kMissing } aranges_ = Aranges::kUnknown;
  RangeIndex cus_;
  Dwarf_Addr dwarf_bias_ = 0;
  Dwarf_Die fallback_cu_;                            // scratch for FindCuWithoutAranges
  std::unordered_map<const void*, CuInfo> cu_info_;  // keyed by the CU DIE's data
  const void* last_cu_ = nullptr;                    // memo of the last InfoFor
  CuInfo* last_info_ = nullptr;
  std::unordered_map<const void*, ScopeTree> functions_;  // keyed by the function DIE's data
  std::vector<uint32_t> chain_;                           // scratch: node indices
  // FunctionName of the abstract origins of inlined instances, keyed by the origin DIE's
  // data: reading a name through DW_AT_abstract_origin/DW_AT_specification takes several
  // scans of each DIE on the way, and a function is inlined in many places.
  struct OriginName {
    const char* name = nullptr;
    bool linkage = false;
  };
  std::unordered_map<const void*, OriginName> origin_names_;
};

}  // namespace inprof::internal

#endif  // INPROF_SYMBOLIZE_INLINE_CHAIN_H_
