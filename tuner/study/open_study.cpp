#include "tuner/study/open_study.h"

#include <fmt/format.h>
#include <filesystem>

#include "probes/blas_kernels.h"
#include "tuner/base/trial_attrs.h"
#include "tuner/storage/storage_url.h"

namespace tune::tuner {

namespace fs = std::filesystem;

std::string storage_url_for(const StudySpec& spec, const std::string& override_url) {
  if (!override_url.empty()) return override_url;
  if (!spec.storage.empty()) return spec.storage;
  return (fs::path(spec.output) / "study.db").string();
}

Result<OpenedStudy> open_existing_study(const std::string& arg, const std::string& storage_url,
                                        const std::string& study_name, OpenMode mode) {
  OpenedStudy opened;
  std::string url = storage_url;
  std::string name = study_name;
  if (arg.ends_with(".yaml") || arg.ends_with(".yml")) {
    auto spec = load_study_spec(arg);
    if (!spec) return std::unexpected(spec.error());
    opened.spec = std::move(*spec);
    url = storage_url_for(*opened.spec, storage_url);
    if (name.empty()) name = opened.spec->name;
  } else if (url.empty()) {
    url = arg;
  }
  if (auto why = storage_url_problem(url))
    return std::unexpected(fmt::format("storage '{}': {}", redact_storage_url(url), *why));
  // An existing study is only read or added to: opening a missing SQLite file would create an
  // empty database (a typo in --storage would leave a stray file and report "no study").
  if (const auto file = sqlite_file_of(url); file && !fs::exists(*file)) {
    return std::unexpected(fmt::format(
        "{}: no such database (run the study first, or pass --storage)", redact_storage_url(url)));
  }
  auto storage = open_storage(url, mode);
  if (!storage) return std::unexpected(storage.error());
  opened.storage = std::move(*storage);
  opened.url = url;
  if (name.empty()) {
    auto studies = opened.storage->get_all_studies();
    if (!studies) return std::unexpected(studies.error().message);
    if (studies->size() != 1) {
      return std::unexpected(fmt::format("{} holds {} studies; name one with --study",
                                         redact_storage_url(url), studies->size()));
    }
    name = studies->front().name;
  }
  auto info = opened.storage->get_study(name);
  if (!info) return std::unexpected(info.error().message);
  opened.cache = std::make_unique<StudyCache>(*opened.storage, *info);
  if (auto r = opened.cache->sync(); !r) return std::unexpected(r.error().message);
  if (opened.spec && !opened.spec->kernel_params.empty()) {
    auto attrs = opened.storage->get_study_user_attrs(info->study_id);
    if (attrs && attrs->contains(k_attr_study_kernel_choices))
      apply_stored_kernel_choices(*opened.spec, (*attrs)[k_attr_study_kernel_choices]);
  }
  return opened;
}

void apply_stored_kernel_choices(StudySpec& spec, const nlohmann::json& stored) {
  if (!stored.is_object()) return;
  for (auto& k : spec.kernel_params) {
    if (k.resolved || !stored.contains(k.name) || !stored[k.name].is_array()) continue;
    std::vector<search::ParamValue> choices = {std::monostate{}};
    bool valid = true;
    for (const auto& v : stored[k.name]) {
      valid = valid && v.is_string() && probes::kernel_name_known(k.library, v.get<std::string>());
      if (valid) choices.push_back(v.get<std::string>());
    }
    if (!valid) continue;
    for (auto& [name, d] : spec.space)
      if (auto* c = std::get_if<search::CategoricalDistribution>(&d); c && name == k.name) {
        c->choices = std::move(choices);
        k.resolved = true;
        break;
      }
  }
}

}  // namespace tune::tuner
