// What libtune_threads.so's library queries (probes/library_query.c) share with its thread
// wrapper (probes/thread_origin.c): the folder's variable and the two moments it reports at
// besides main and exit. C; the C++ reader is probes/library_report.h.
#pragma once

#define TUNE_LIBRARY_REPORTS_ENV "TUNE_LIBRARY_REPORTS"

#ifdef __cplusplus
extern "C" {
#endif
// Writes this process's report now (nothing without the variable).
__attribute__((visibility("hidden"))) void tune_library_query_report(void);
// Called as a thread starts: reports when libraries were loaded since the last report.
__attribute__((visibility("hidden"))) void tune_library_query_on_thread(void);
#ifdef __cplusplus
}
#endif
