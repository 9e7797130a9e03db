// The timeline page's style sheet, the markup below its heat maps, and its script
// (timeline.cpp writes the maps and the data): viewer/resources/timeline.css,
// timeline_body.html and timeline.js, made into these arrays at build time
// (cmake/embed.cmake). Self-contained on purpose, as the flame graphs are: the page is mailed
// and opened from disk, so it loads nothing. Their bytes go into every page as they are.
//
// The script reads the data once: stacks as a tree (node i: parent, symbol; parents come
// first), and per map its non-empty cells [column, row, samples, weight, [leaf, weight, ...]].
// A selection is a run of cells in time order (column by column, rows within; a cell's number
// is its second since the start times the rows, plus its row, whatever column shows it). Its flame
// graph is the leaves' weights in those cells, added up the tree, laid out and written as
// the SVG document `inprof flame` writes (the writer's own head: gradient, style, script),
// shown in a frame from a blob: URL, so zoom and search work as in any of our graphs.
#ifndef INPROF_VIEWER_TIMELINE_PAGE_H_
#define INPROF_VIEWER_TIMELINE_PAGE_H_

namespace inprof::viewer {

extern const char kTimelinePageStyle[];
extern const char kTimelinePageBody[];
extern const char kTimelinePageScript[];

}  // namespace inprof::viewer

#endif  // INPROF_VIEWER_TIMELINE_PAGE_H_
