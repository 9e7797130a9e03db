// A shared object with nothing in it: bench/process_start.sh preloads it to measure what any
// preloaded library costs a process, the floor under libinprof.so's own cost.
int inprof_bench_empty_preload;
