// The report's Libraries section: what the ranks' BLAS and OpenMP libraries said they run
// (probes/library_report.h, stored by the probe hooks as system attr probe_libraries).
#include <algorithm>
#include <set>

#include "probes/library_report.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/report/report_model.h"

namespace tune::tuner {

namespace {

std::optional<probes::LibrariesSummary> libraries_of(const search::FrozenTrial& t) {
  const auto it = t.system_attrs.find(k_attr_probe_libraries);
  if (it == t.system_attrs.end()) return std::nullopt;
  return probes::LibrariesSummary::from_json(*it);
}

std::vector<std::string> texts(const probes::LibrariesSummary& s) {
  std::vector<std::string> out;
  for (const auto& u : s.libraries) out.push_back(u.text);
  for (const auto& [name, value] : s.forcing_env)
    if (std::ranges::none_of(s.libraries,
                             [&](const auto& u) { return u.forced_by == name + "=" + value; }))
      out.push_back("the environment sets " + name + "=" + value);
  return out;
}

std::string openblas_core(const probes::LibrariesSummary& s) {
  for (const auto& u : s.libraries)
    if (u.kind == "openblas") return u.core;
  return "";
}

const search::FrozenTrial* trial_numbered(const search::StudyView& study, int number) {
  for (const auto& t : study.trials())
    if (t.number == number) return &t;
  return nullptr;
}

}  // namespace

std::optional<LibrariesSection> libraries_section(const search::StudyView& study,
                                                  const ReportData& data) {
  const search::FrozenTrial* from = nullptr;
  if (data.baseline) from = trial_numbered(study, data.baseline->number);
  std::optional<probes::LibrariesSummary> summary;
  if (from != nullptr) summary = libraries_of(*from);
  if (!summary) {
    for (const auto& t : study.trials())
      if ((summary = libraries_of(t))) {
        from = &t;
        break;
      }
  }
  if (!summary || from == nullptr) return std::nullopt;
  LibrariesSection section;
  section.trial = from->number;
  section.lines = texts(*summary);
  section.notes = summary->notes;
  if (data.best && data.best->number != from->number) {
    if (const auto* best = trial_numbered(study, data.best->number)) {
      if (const auto b = libraries_of(*best); b && texts(*b) != section.lines) {
        section.best_trial = best->number;
        section.best_lines = texts(*b);
      }
    }
  }
  // Which OpenBLAS kernels the trials ran: a study that never left the baseline's kernel says so.
  const std::string first = openblas_core(*summary);
  if (!first.empty()) {
    std::set<std::string> cores;
    for (const auto& t : study.trials())
      if (const auto s = libraries_of(t)) {
        const std::string core = openblas_core(*s);
        if (!core.empty()) cores.insert(core);
      }
    if (cores.size() > 1) {
      std::string list;
      for (const auto& c : cores) list += (list.empty() ? "" : ", ") + c;
      section.kernels_tried = "the trials ran OpenBLAS's " + list + " kernels";
    } else if (summary->stale_openblas() != nullptr) {
      section.kernels_tried =
          "every trial ran OpenBLAS's " + first +
          " kernels: the study tried no other (a kernel parameter, `{type: kernel}` set as "
          "OPENBLAS_CORETYPE, would; tune init adds it)";
    }
  }
  return section;
}

}  // namespace tune::tuner
