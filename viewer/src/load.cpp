// Loading a profile file of any supported kind into the annotation model.
#include <memory>
#include <string>

#include "input_files.h"
#include "progress.h"
#include "viewer.h"

namespace inprof::viewer {
namespace {

// A profile file's bytes (input_files.h: regular files mapped, pipes read, both bounded),
// with the load's progress on stderr when asked.
class FileText {
 public:
  // With `progress`, a long load shows its progress on stderr through `*shown`, which the
  // caller keeps until parsing ends.
  Status Open(const std::string& path, bool progress, std::unique_ptr<Progress>* shown) {
    uint64_t size = 0;
    if (Status s = file_.Open(path, /*pipes=*/true, &size); !s.ok()) return s;
    *shown = std::make_unique<Progress>(path, size, progress && size > 0);
    Progress* p = shown->get();
    Status s = file_.Read(
        [](void* context, uint64_t bytes) { static_cast<Progress*>(context)->SetRead(bytes); }, p);
    if (s.ok()) p->SetParsing();
    return s;
  }

  std::string_view text() const { return file_.text(); }

 private:
  ProfileFile file_;
};

}  // namespace

InputKind DetectInput(const std::string& path, std::string_view text) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') return InputKind::kAnnotationJson;
  if (LooksLikePerfReport(text)) return InputKind::kPerfReport;
  if (LooksLikePerfScript(text)) return InputKind::kPerfScript;
  // perf.log and folded lines look alike ("...;... 12"); perfanno's name decides.
  if (path.size() > 4 && path.ends_with(".log")) return InputKind::kPerfLog;
  return InputKind::kFolded;
}

namespace {

Status ParseStacks(const std::string& path, InputKind kind, std::string_view text, Profile* out) {
  Status s;
  switch (kind) {
    case InputKind::kPerfScript:
      s = ReadPerfScript(text, path, out);
      break;
    case InputKind::kPerfReport:
      s = ReadPerfReport(text, path, out);
      break;
    case InputKind::kPerfLog:
      s = ReadPerfLog(text, path, out);
      break;
    default:
      s = ReadFolded(text, path, out);
      break;
  }
  if (!s.ok()) return s;
  if (out->samples.empty()) {
    return Status::Error(path + ":1: expected at least one stack (the file is empty)");
  }
  return Status::Ok();
}

}  // namespace

Status LoadInput(const std::string& path, bool progress, Input* out, bool annotate) {
  FileText file;
  std::unique_ptr<Progress> shown;
  if (Status s = file.Open(path, progress, &shown); !s.ok()) return s;
  const std::string_view text = file.text();
  out->kind = DetectInput(path, text);
  if (out->kind == InputKind::kAnnotationJson) {
    out->has_stacks = false;
    return ReadAnnotationJson(text, path, &out->annotations);
  }
  out->has_stacks = true;
  if (Status s = ParseStacks(path, out->kind, text, &out->profile); !s.ok()) return s;
  if (annotate) out->annotations = BuildAnnotations(out->profile);
  return Status::Ok();
}

Status LoadAnnotations(const std::string& path, Annotations* out, bool progress) {
  Input input;
  if (Status s = LoadInput(path, progress, &input); !s.ok()) return s;
  *out = std::move(input.annotations);
  return Status::Ok();
}

void RemapPaths(const std::vector<std::pair<std::string, std::string>>& maps, Annotations& a) {
  if (maps.empty()) return;
  auto remap = [&](std::string& path) {
    for (const auto& [from, to] : maps) {
      if (path.starts_with(from)) {
        path = to + path.substr(from.size());
        return;
      }
    }
  };
  for (FileStats& file : a.files) {
    remap(file.path);
    for (FunctionStats& fn : file.functions) remap(fn.file);
  }
}

bool FindEvent(const Annotations& a, const std::string& name, size_t* event, std::string* error) {
  if (a.events.empty()) {
    *error = "the profile has no events";
    return false;
  }
  if (name.empty()) {
    *event = 0;
    return true;
  }
  std::string known;
  for (size_t i = 0; i < a.events.size(); ++i) {
    if (a.events[i].name == name) {
      *event = i;
      return true;
    }
    known += (i ? ", " : "") + a.events[i].name;
  }
  *error = "no event '" + name + "' in the profile (it has: " + known + ")";
  return false;
}

}  // namespace inprof::viewer
