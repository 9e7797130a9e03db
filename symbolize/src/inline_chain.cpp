#include "inline_chain.h"

#include <dwarf.h>

#include <algorithm>
#include <iterator>

namespace inprof::internal {
namespace {

// Nesting deeper than this is malformed (or a reference cycle through imported units).
constexpr int kMaxDepth = 64;

// Same preference as eu-addr2line: the (possibly inherited through DW_AT_abstract_origin /
// DW_AT_specification) linkage name, so C++ names demangle to full signatures as perf shows
// them; DW_AT_name for C and for functions without one (main, extern "C").
// Damaged string sections yield empty names: treated as no name.
const char* FunctionName(Dwarf_Die* die, bool* linkage) {
  const auto usable = [](const char* name) { return name != nullptr && name[0] != '\0'; };
  Dwarf_Attribute attr;
  const char* name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
  if (!usable(name)) name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
  *linkage = usable(name);
  if (!usable(name)) name = dwarf_diename(die);
  return usable(name) ? name : nullptr;
}

const char* CompDir(Dwarf_Die* cu) {
  Dwarf_Attribute attr;
  return cu != nullptr ? dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &attr)) : nullptr;
}

// Languages whose DW_AT_name is the symbol name (binutils' non_mangled()).
bool UnmangledLanguage(Dwarf_Die* cu) {
  switch (dwarf_srclang(cu)) {
    case DW_LANG_C89:
    case DW_LANG_C:
    case DW_LANG_Ada83:
    case DW_LANG_Cobol74:
    case DW_LANG_Cobol85:
    case DW_LANG_Fortran77:
    case DW_LANG_Pascal83:
    case DW_LANG_C99:
    case DW_LANG_Ada95:
    case DW_LANG_PLI:
    case DW_LANG_UPC:
    case DW_LANG_C11:
    case DW_LANG_Mips_Assembler:
      return true;
    default:
      return false;
  }
}

uint32_t Discriminator(Dwarf_Line* line) {
  unsigned int value = 0;
  return line != nullptr && dwarf_linediscriminator(line, &value) == 0 ? value : 0;
}

bool IsFunction(int tag) { return tag == DW_TAG_subprogram || tag == DW_TAG_entry_point; }

}  // namespace

bool IsCodeScope(int tag) {
  switch (tag) {
    case DW_TAG_lexical_block:
    case DW_TAG_inlined_subroutine:
    case DW_TAG_subprogram:
    case DW_TAG_entry_point:
    case DW_TAG_try_block:
    case DW_TAG_catch_block:
    case DW_TAG_with_stmt:
    case DW_TAG_module:
      return true;
    default:
      return false;
  }
}

void InlineResolver::Collect(Dwarf_Die* parent, int depth, RangeIndex* index) {
  Dwarf_Die child;
  if (depth > kMaxDepth || dwarf_child(parent, &child) != 0) return;
  do {
    const int tag = dwarf_tag(&child);
    if (IsFunction(tag)) {
      // Functions are indexed as a whole; what is nested inside is found at lookup time.
      Dwarf_Addr base = 0;
      Dwarf_Addr low = 0;
      Dwarf_Addr high = 0;
      ptrdiff_t offset = 0;
      while ((offset = dwarf_ranges(&child, offset, &base, &low, &high)) > 0) {
        if (high > low) {
          index->push_back({low, high, 0, static_cast<uint32_t>(index->size()), child});
        }
      }
    } else if (tag == DW_TAG_namespace || tag == DW_TAG_module) {
      // clang nests namespace-scope function definitions inside the namespace DIE. Class
      // types are not searched (libdw's own walk does): GCC and clang put the concrete
      // DIE of a member function at namespace or CU level, and class members are most of
      // the DIEs in a C++ CU, so searching them would dominate the cost of a new CU.
      if (dwarf_haschildren(&child) > 0) Collect(&child, depth + 1, index);
    } else if (tag == DW_TAG_imported_unit) {
      // dwz moves shared DIEs into partial units; their children count as ours.
      Dwarf_Attribute attr;
      Dwarf_Die unit;
      if (dwarf_formref_die(dwarf_attr(&child, DW_AT_import, &attr), &unit) != nullptr &&
          dwarf_tag(&unit) != DW_TAG_compile_unit) {
        Collect(&unit, depth + 1, index);
      }
    }
  } while (dwarf_siblingof(&child, &child) == 0);
}

void InlineResolver::Finish(RangeIndex* index) {
  std::sort(index->begin(), index->end(), [](const DieRange& a, const DieRange& b) {
    return a.low != b.low ? a.low < b.low : a.order < b.order;
  });
  Dwarf_Addr max_high = 0;
  for (DieRange& range : *index) {
    max_high = std::max(max_high, range.high);
    range.max_high = max_high;
  }
  index->shrink_to_fit();
}

InlineResolver::CuInfo& InlineResolver::InfoFor(Dwarf_Die* cudie) {
  if (cudie->addr == last_cu_) return *last_info_;
  auto [it, inserted] = cu_info_.try_emplace(cudie->addr);
  CuInfo& info = it->second;
  if (inserted) {
    Collect(cudie, 0, &info.functions);
    Finish(&info.functions);
    Dwarf_Addr base = 0;
    Dwarf_Addr low = 0;
    Dwarf_Addr high = 0;
    ptrdiff_t offset = 0;
    while ((offset = dwarf_ranges(cudie, offset, &base, &low, &high)) > 0) {
      if (high > low) info.ranges.emplace_back(low, high);
    }
    // Sorted and merged into disjoint ranges: one binary search answers dwarf_haspc.
    std::sort(info.ranges.begin(), info.ranges.end());
    size_t merged = 0;
    for (const auto& range : info.ranges) {
      if (merged > 0 && range.first <= info.ranges[merged - 1].second) {
        info.ranges[merged - 1].second = std::max(info.ranges[merged - 1].second, range.second);
      } else {
        info.ranges[merged++] = range;
      }
    }
    info.ranges.resize(merged);
    info.ranges.shrink_to_fit();
    info.comp_dir = CompDir(cudie);
    info.unmangled = UnmangledLanguage(cudie);
  }
  // unordered_map never moves its elements, so the pointer stays valid.
  last_cu_ = cudie->addr;
  last_info_ = &info;
  return info;
}

// dwarf_getsrc_die's answer (and libdwfl's, which searches the same rows): the last row at
// or below pc, unless that is an end of sequence.
Dwarf_Line* InlineResolver::LineFor(Dwarf_Die* cudie, CuInfo* info, Dwarf_Addr pc) {
  if (!info->lines_built) {
    info->lines_built = true;
    size_t count = 0;
    if (dwarf_getsrclines(cudie, &info->lines, &count) != 0) {
      info->lines = nullptr;
      count = 0;
    }
    info->line_addrs.resize(count);
    for (size_t i = 0; i < count; ++i) {
      Dwarf_Addr address = 0;
      dwarf_lineaddr(dwarf_onesrcline(info->lines, i), &address);
      info->line_addrs[i] = address;
    }
  }
  if (info->line_addrs.empty()) return nullptr;
  auto it = std::upper_bound(info->line_addrs.begin(), info->line_addrs.end(), pc);
  const size_t row = it == info->line_addrs.begin() ? 0 : it - info->line_addrs.begin() - 1;
  Dwarf_Line* line = dwarf_onesrcline(info->lines, row);
  bool end_sequence = false;
  if (line == nullptr || dwarf_lineendsequence(line, &end_sequence) != 0 || end_sequence ||
      info->line_addrs[row] > pc) {
    return nullptr;
  }
  return line;
}

bool InlineResolver::Covers(const CuInfo& info, Dwarf_Addr pc) {
  auto it = std::upper_bound(info.ranges.begin(), info.ranges.end(), pc,
                             [](Dwarf_Addr a, const auto& r) { return a < r.first; });
  return it != info.ranges.begin() && pc < std::prev(it)->second;
}

bool InlineResolver::Find(const RangeIndex& index, Dwarf_Addr pc, Overlap overlap, Dwarf_Die* out) {
  auto it = std::upper_bound(index.begin(), index.end(), pc,
                             [](Dwarf_Addr a, const DieRange& r) { return a < r.low; });
  const DieRange* best = nullptr;
  const auto better = [overlap](const DieRange& a, const DieRange& b) {
    if (overlap == Overlap::kFirstDie) return a.order < b.order;
    const Dwarf_Addr a_size = a.high - a.low;
    const Dwarf_Addr b_size = b.high - b.low;
    return a_size != b_size ? a_size < b_size : a.order > b.order;
  };
  while (it != index.begin()) {
    --it;
    if (it->max_high <= pc) break;  // nothing at or before this entry reaches pc
    if (pc < it->high && (best == nullptr || better(*it, *best))) best = &*it;
  }
  if (best == nullptr) return false;
  *out = best->die;
  return true;
}

Dwarf_Die* InlineResolver::FindCuWithoutAranges(uint64_t address, Dwarf_Addr* bias) {
  if (aranges_ == Aranges::kUnknown) {
    aranges_ = Aranges::kPresent;  // also when there is no DWARF at all: nothing to index
    Dwarf* dwarf = dwfl_module_getdwarf(module_, &dwarf_bias_);
    Dwarf_Aranges* aranges = nullptr;
    size_t count = 0;
    if (dwarf != nullptr && dwarf_getaranges(dwarf, &aranges, &count) == 0 && count == 0) {
      aranges_ = Aranges::kMissing;
      Dwarf_Addr cu_bias = 0;
      for (Dwarf_Die* cu = dwfl_module_nextcu(module_, nullptr, &cu_bias); cu != nullptr;
           cu = dwfl_module_nextcu(module_, cu, &cu_bias)) {
        Dwarf_Addr base = 0;
        Dwarf_Addr low = 0;
        Dwarf_Addr high = 0;
        ptrdiff_t offset = 0;
        while ((offset = dwarf_ranges(cu, offset, &base, &low, &high)) > 0) {
          if (high > low) cus_.push_back({low, high, 0, static_cast<uint32_t>(cus_.size()), *cu});
        }
      }
      Finish(&cus_);
    }
  }
  if (aranges_ != Aranges::kMissing ||
      !Find(cus_, address - dwarf_bias_, Overlap::kFirstDie, &fallback_cu_)) {
    return nullptr;
  }
  *bias = dwarf_bias_;
  return &fallback_cu_;
}

uint32_t InlineResolver::AddNode(ScopeTree* tree, Dwarf_Die die, int tag) {
  ScopeTree::Node node{};
  node.die = die;
  node.tag = tag;
  node.first_range = static_cast<uint32_t>(tree->ranges.size());
  Dwarf_Addr base = 0;
  Dwarf_Addr low = 0;
  Dwarf_Addr high = 0;
  ptrdiff_t offset = 0;
  while ((offset = dwarf_ranges(&die, offset, &base, &low, &high)) > 0) {
    if (high > low) tree->ranges.emplace_back(low, high);
  }
  node.range_count = static_cast<uint32_t>(tree->ranges.size()) - node.first_range;
  tree->nodes.push_back(node);
  return static_cast<uint32_t>(tree->nodes.size() - 1);
}

void InlineResolver::Expand(ScopeTree* tree, uint32_t index, int depth) {
  // A scope without addresses cannot contain pc; libdw's walk prunes it and so do we.
  if (depth > kMaxDepth || tree->nodes[index].range_count == 0) return;
  // A node's children are appended before any of them is expanded, so they are contiguous
  // without a list of their own (one allocation per node was a visible cost of new trees).
  const auto first = static_cast<uint32_t>(tree->children.size());
  Dwarf_Die child;
  Dwarf_Die die = tree->nodes[index].die;
  if (dwarf_child(&die, &child) == 0) {
    do {
      const int tag = dwarf_tag(&child);
      if (IsCodeScope(tag)) tree->children.push_back(AddNode(tree, child, tag));
    } while (dwarf_siblingof(&child, &child) == 0);
  }
  const auto count = static_cast<uint32_t>(tree->children.size()) - first;
  tree->nodes[index].first_child = first;
  tree->nodes[index].child_count = count;
  for (uint32_t i = 0; i < count; ++i) Expand(tree, tree->children[first + i], depth + 1);
}

InlineResolver::ScopeTree& InlineResolver::TreeFor(const Dwarf_Die& function) {
  auto it = functions_.find(function.addr);
  if (it != functions_.end()) return it->second;
  ScopeTree tree;
  Dwarf_Die die = function;
  AddNode(&tree, die, dwarf_tag(&die));
  Expand(&tree, 0, 0);
  tree.nodes.shrink_to_fit();
  tree.ranges.shrink_to_fit();
  tree.children.shrink_to_fit();
  return functions_.emplace(function.addr, std::move(tree)).first->second;
}

namespace {

// The attributes Describe reads from an inlined instance, in one pass over the DIE: asking
// dwarf_attr for each one scans the DIE again every time.
struct InstanceAttrs {
  Dwarf_Attribute name{}, linkage{}, mips_linkage{}, origin{}, specification{};
  Dwarf_Attribute call_file{}, call_line{}, call_column{};
  bool has_name = false, has_linkage = false, has_mips_linkage = false;
  bool has_origin = false, has_specification = false;
  bool has_call_file = false, has_call_line = false, has_call_column = false;
};

int CollectInstanceAttr(Dwarf_Attribute* attr, void* arg) {
  auto* out = static_cast<InstanceAttrs*>(arg);
  // The first of duplicated attributes wins, as in dwarf_attr.
  const auto keep = [attr](Dwarf_Attribute* slot, bool* seen) {
    if (!*seen) {
      *slot = *attr;
      *seen = true;
    }
  };
  switch (dwarf_whatattr(attr)) {
    case DW_AT_name:
      keep(&out->name, &out->has_name);
      break;
    case DW_AT_linkage_name:
      keep(&out->linkage, &out->has_linkage);
      break;
    case DW_AT_MIPS_linkage_name:
      keep(&out->mips_linkage, &out->has_mips_linkage);
      break;
    case DW_AT_abstract_origin:
      keep(&out->origin, &out->has_origin);
      break;
    case DW_AT_specification:
      keep(&out->specification, &out->has_specification);
      break;
    case DW_AT_call_file:
      keep(&out->call_file, &out->has_call_file);
      break;
    case DW_AT_call_line:
      keep(&out->call_line, &out->has_call_line);
      break;
    case DW_AT_call_column:
      keep(&out->call_column, &out->has_call_column);
      break;
    default:
      break;
  }
  return DWARF_CB_OK;
}

uint32_t Udata(Dwarf_Attribute* attr, bool present) {
  Dwarf_Word value = 0;
  if (!present || dwarf_formudata(attr, &value) != 0) return 0;
  return value > UINT32_MAX ? 0 : static_cast<uint32_t>(value);
}

}  // namespace

void InlineResolver::Describe(ScopeTree::Node* node, Dwarf_Die* cudie) {
  if (node->described) return;
  node->described = true;
  if (node->tag != DW_TAG_inlined_subroutine && !IsFunction(node->tag)) return;
  if (node->tag != DW_TAG_inlined_subroutine) {
    node->name = FunctionName(&node->die, &node->linkage_name);
    return;
  }
  InstanceAttrs attrs;
  Dwarf_Die instance = node->die;
  if (dwarf_getattrs(&instance, CollectInstanceAttr, &attrs, 0) != 1) {
    node->name = FunctionName(&node->die, &node->linkage_name);
    attrs = InstanceAttrs{};
    Dwarf_Attribute attr;
    if (dwarf_attr(&instance, DW_AT_call_file, &attr) != nullptr) {
      attrs.call_file = attr;
      attrs.has_call_file = true;
    }
    attrs.has_call_line = dwarf_attr(&instance, DW_AT_call_line, &attrs.call_line) != nullptr;
    attrs.has_call_column = dwarf_attr(&instance, DW_AT_call_column, &attrs.call_column) != nullptr;
  } else if (!attrs.has_name && !attrs.has_linkage && !attrs.has_mips_linkage &&
             (attrs.has_origin || attrs.has_specification)) {
    // The usual instance: no name of its own, so its name is its origin's (the DIE
    // dwarf_attr_integrate moves to), shared by every instance of that function.
    Dwarf_Die origin;
    Dwarf_Attribute* ref = attrs.has_origin ? &attrs.origin : &attrs.specification;
    if (dwarf_formref_die(ref, &origin) == nullptr) {
      node->name = nullptr;
      node->linkage_name = false;
    } else {
      auto [it, inserted] = origin_names_.try_emplace(origin.addr);
      if (inserted) it->second.name = FunctionName(&origin, &it->second.linkage);
      node->name = it->second.name;
      node->linkage_name = it->second.linkage;
    }
  } else {
    node->name = FunctionName(&node->die, &node->linkage_name);
  }
  Dwarf_Files* files = nullptr;
  size_t nfiles = 0;
  Dwarf_Word file_index = 0;
  if (attrs.has_call_file && dwarf_getsrcfiles(cudie, &files, &nfiles) == 0 &&
      dwarf_formudata(&attrs.call_file, &file_index) == 0 && file_index < nfiles) {
    node->call_file = dwarf_filesrc(files, file_index, nullptr, nullptr);
  }
  node->call_line = Udata(&attrs.call_line, attrs.has_call_line);
  node->call_column = Udata(&attrs.call_column, attrs.has_call_column);
}

uint64_t InlineResolver::EntryOf(const ScopeTree& tree, const ScopeTree::Node& node,
                                 Dwarf_Addr bias) {
  return node.range_count > 0 ? tree.ranges[node.first_range].first + bias : 0;
}

bool InlineResolver::Resolve(uint64_t address, std::vector<DwarfFrame>* frames) {
  if (module_ == nullptr) return false;
  Dwarf_Addr bias = 0;
  Dwarf_Die* cudie = dwfl_module_addrdie(module_, address, &bias);
  const bool via_aranges = cudie != nullptr;
  if (!via_aranges) cudie = FindCuWithoutAranges(address, &bias);
  if (cudie == nullptr) return false;
  const Dwarf_Addr pc = address - bias;
  // libdw finds the CU through .debug_aranges; when those are imprecise (crt objects,
  // `_start`) the CU does not really cover pc and its line table would give a bogus line.
  CuInfo& cu = InfoFor(cudie);
  if (!Covers(cu, pc)) return false;
  const char* comp_dir = cu.comp_dir;
  const bool unmangled = cu.unmangled;

  DwarfFrame current;
  // Both paths (CU found through .debug_aranges or through our CU index) read the CU's own
  // line table, as libdwfl's dwfl_module_getsrc does for the former.
  if (Dwarf_Line* line = LineFor(cudie, &cu, pc)) {
    int lineno = 0;
    int column = 0;
    if (const char* file = dwarf_linesrc(line, nullptr, nullptr)) {
      current.file = file;
      current.comp_dir = comp_dir;
      if (dwarf_lineno(line, &lineno) == 0 && lineno > 0) {
        current.line = static_cast<uint32_t>(lineno);
      }
      if (dwarf_linecol(line, &column) == 0 && column > 0) {
        current.column = static_cast<uint32_t>(column);
      }
      current.discriminator = Discriminator(line);
    }
  }

  // The concrete chain, outermost first: the function, then at each level the first child
  // scope that contains pc (libdw's dwarf_getscopes picks the same one).
  chain_.clear();
  ScopeTree* tree = nullptr;
  Dwarf_Die function;
  if (Find(cu.functions, pc, overlap_, &function)) {
    tree = &TreeFor(function);
    uint32_t node = 0;
    chain_.push_back(node);
    for (bool descended = true; descended;) {
      descended = false;
      const ScopeTree::Node& parent = tree->nodes[node];
      for (uint32_t c = 0; c < parent.child_count && !descended; ++c) {
        const uint32_t kid = tree->children[parent.first_child + c];
        const ScopeTree::Node& child = tree->nodes[kid];
        for (uint32_t r = 0; r < child.range_count; ++r) {
          const auto& [low, high] = tree->ranges[child.first_range + r];
          if (pc >= low && pc < high) {
            node = kid;
            chain_.push_back(node);
            descended = true;
            break;
          }
        }
      }
    }
  }

  // The frame of `node` at the location `current` holds.
  const auto push = [&](ScopeTree::Node& node, bool inlined) {
    Describe(&node, cudie);
    current.function = node.name;
    current.linkage_name = node.linkage_name;
    current.unmangled_language = unmangled;
    current.entry = EntryOf(*tree, node, bias);
    current.scope = node.die.addr;
    current.inlined = inlined;
    frames->push_back(current);
  };
  bool found_function = false;
  for (size_t i = chain_.size(); i-- > 0;) {
    ScopeTree::Node& node = tree->nodes[chain_[i]];
    if (IsFunction(node.tag)) {
      push(node, false);
      found_function = true;
      break;
    }
    if (node.tag != DW_TAG_inlined_subroutine) continue;
    push(node, true);

    // The frame outside this instance is at its call site.
    current = DwarfFrame{};
    current.file = node.call_file;
    current.comp_dir = node.call_file != nullptr ? comp_dir : nullptr;
    current.line = node.call_line;
    current.column = node.call_column;
  }
  if (!found_function) {
    current.function = nullptr;
    current.inlined = false;
    frames->push_back(current);
  }
  return true;
}

}  // namespace inprof::internal
