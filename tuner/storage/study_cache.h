// StudyCache: a study's trials as one process last read them from its Storage, kept current by
// reading only what changed (Storage::get_trials_changed). The samplers, pruners and the runner
// look at the history through it (search::StudyView). It holds a reference to the Storage, which
// must outlive it; like the Storage, it is used by one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <unordered_map>
#include <vector>

#include "search/trial.h"
#include "tuner/storage/storage.h"

namespace tune::tuner {

// A cache of a study's trials that reads only what changed since its last sync (new trials and
// changed ones, Storage::get_trials_changed), so the per-trial cost of looking at the history
// stays flat as the study grows and as workers are added. It keeps a change log (StudyView):
// each trial a sync added or replaced, by position, so readers derive from the history
// incrementally too.
class StudyCache final : public search::StudyView {
 public:
  StudyCache(Storage& storage, StudyInfo study)
      : m_storage(storage), m_study(std::move(study)), m_log_id(search::new_change_log_id()) {}
  [[nodiscard]] StorageResult<void> sync();
  // The next sync() re-reads this finished trial too (this process changed its value; needed
  // only where the storage keeps no change count).
  void mark_stale(std::int64_t trial_id) { m_stale.push_back(trial_id); }
  search::Direction direction() const override { return m_study.direction; }
  std::vector<search::Direction> directions() const override { return m_study.directions; }
  const std::vector<search::FrozenTrial>& trials() const override { return m_trials; }
  std::optional<std::span<const std::size_t>> changes_since(
      const search::ChangeCursor& cursor) const override;
  search::ChangeCursor cursor() const override { return {m_log_id, m_log.size()}; }
  const StudyInfo& study() const { return m_study; }
  // The trial with this id, as last synced; nullptr when the cache holds none.
  const search::FrozenTrial* find(std::int64_t trial_id) const;
  // How many trials are WAITING, as last synced.
  std::size_t waiting() const { return m_waiting; }

 private:
  void apply(search::FrozenTrial trial);
  void count(const search::FrozenTrial& trial, int sign);

  Storage& m_storage;
  StudyInfo m_study;
  std::vector<search::FrozenTrial> m_trials;                 // number order
  std::unordered_map<std::int64_t, std::size_t> m_position;  // trial id -> index
  StudyMark m_mark;
  std::set<std::int64_t> m_unfinished;  // trial ids (Storage::get_trials_changed's `refresh`)
  std::size_t m_waiting = 0;
  std::vector<std::int64_t> m_stale;  // finished trials to re-read at the next sync()
  std::uint64_t m_log_id;             // a new one whenever trials move (an insertion)
  std::vector<std::size_t> m_log;     // positions added or replaced, in order
};

}  // namespace tune::tuner
