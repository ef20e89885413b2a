// The storage suite every Storage backend passes (as Optuna's testing/ suites): trial life
// cycle, frozen finished trials, WAITING trials popped once each, the cache's delta, unique
// numbers under concurrent writers, UTC timestamps, first heartbeats, multi-objective studies. A
// backend joins by instantiating StorageSuite with a StorageBackend (SQLite:
// tests/tuner/storage/storage_test.cpp; PostgreSQL on a throwaway server:
// tests/cluster/postgres_storage_test.cpp). Header only: each test binary that includes it runs the
// suite against its own backends.
#pragma once

#include <gtest/gtest.h>

#include <fmt/format.h>
#include <stdlib.h>

#include <cmath>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <thread>

#include "tuner/base/trial_attrs.h"
#include "tuner/storage/storage.h"
#include "tuner/storage/storage_url.h"
#include "tuner/storage/study_cache.h"

namespace tune::tuner {

struct StorageBackend {
  std::string name;
  // The URL of a new, empty database for the running test; "" with `skip` set to a one-line
  // reason where this machine cannot have one.
  std::function<std::string(std::string* skip)> fresh_url;
};

inline std::string PrintToString(const StorageBackend* b) { return b->name; }

// Sets TZ for the scope (the C library's local time), restoring it after.
class ScopedTimeZone {
 public:
  explicit ScopedTimeZone(const char* tz) {
    if (const char* old = getenv("TZ")) m_old = old;
    setenv("TZ", tz, 1);
    tzset();
  }
  ~ScopedTimeZone() {
    if (m_old) {
      setenv("TZ", m_old->c_str(), 1);
    } else {
      unsetenv("TZ");
    }
    tzset();
  }

 private:
  std::optional<std::string> m_old;
};

class StorageSuite : public ::testing::TestWithParam<const StorageBackend*> {
 protected:
  void SetUp() override {
    std::string skip;
    m_url = GetParam()->fresh_url(&skip);
    if (m_url.empty()) GTEST_SKIP() << skip;
  }
  std::unique_ptr<Storage> open() {
    auto s = open_storage(m_url);
    EXPECT_TRUE(s) << s.error();
    return s ? std::move(*s) : nullptr;
  }
  std::string m_url;
};

TEST_P(StorageSuite, TrialLifeCycle) {
  auto s = open();
  bool created = false;
  auto study = s->get_or_create_study("demo", search::Direction::maximize, &created);
  ASSERT_TRUE(study) << study.error();
  EXPECT_TRUE(created);
  auto again = s->get_or_create_study("demo", search::Direction::maximize, &created);
  EXPECT_FALSE(created);
  EXPECT_EQ(again->study_id, study->study_id);
  EXPECT_FALSE(s->get_or_create_study("demo", search::Direction::minimize, nullptr));

  auto t0 = s->create_trial(study->study_id, search::TrialState::running, {{"k", 1}});
  auto t1 = s->create_trial(study->study_id, search::TrialState::running, {});
  ASSERT_TRUE(t0 && t1);
  EXPECT_EQ(t0->number, 0);
  EXPECT_EQ(t1->number, 1);
  const search::Distribution dist = search::IntDistribution{1, 8, false, 1};
  ASSERT_TRUE(s->set_trial_param(t0->trial_id, "threads", 4.0, dist));
  ASSERT_TRUE(s->set_trial_intermediate_value(t0->trial_id, 10, 0.5));
  ASSERT_TRUE(s->set_trial_user_attr(t0->trial_id, k_attr_launched_argv, {"mpirun", "-n", "2"}));
  ASSERT_TRUE(s->set_trial_system_attr(t0->trial_id, k_attr_constraints, {-0.5}));
  auto done = s->set_trial_state_values(t0->trial_id, search::TrialState::complete, 123.5);
  ASSERT_TRUE(done);
  EXPECT_TRUE(*done);
  // Finished trials are frozen.
  auto refused = s->set_trial_state_values(t0->trial_id, search::TrialState::fail, std::nullopt);
  ASSERT_TRUE(refused);
  EXPECT_FALSE(*refused);

  auto t = s->get_trial(t0->trial_id);
  ASSERT_TRUE(t) << t.error();
  EXPECT_EQ(t->state, search::TrialState::complete);
  EXPECT_EQ(*t->value, 123.5);
  EXPECT_EQ(t->params.at("threads"), 4.0);
  EXPECT_EQ(std::get<search::IntDistribution>(t->distributions.at("threads")).high, 8);
  EXPECT_EQ(t->intermediate_values.at(10), 0.5);
  EXPECT_EQ(t->user_attrs[k_attr_launched_argv][2], "2");
  EXPECT_EQ(t->system_attrs["k"], 1);
  ASSERT_EQ(t->constraints.size(), 1u);
  EXPECT_TRUE(t->is_feasible());
  ASSERT_TRUE(t->datetime_start && t->datetime_complete);
  EXPECT_LE(*t->datetime_start, *t->datetime_complete);
  EXPECT_FALSE(s->get_trial(t1->trial_id + 100));

  auto all = s->get_all_trials(study->study_id);
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[1].state, search::TrialState::running);
  auto studies = s->get_all_studies();
  ASSERT_TRUE(studies);
  ASSERT_EQ(studies->size(), 1u);
  EXPECT_EQ(studies->front().direction, search::Direction::maximize);
  ASSERT_TRUE(s->set_study_user_attr(study->study_id, "file", "a.yaml"));
  EXPECT_EQ((*s->get_study_user_attrs(study->study_id))["file"], "a.yaml");
}

// A multi-objective study as Optuna stores one: a study_directions row per objective and a
// trial_values row per objective, read back in objective order through the cache's delta too.
TEST_P(StorageSuite, MultiObjectiveDirectionsAndValues) {
  auto s = open();
  const std::vector<search::Direction> dirs = {search::Direction::minimize,
                                               search::Direction::maximize};
  bool created = false;
  auto study = s->get_or_create_study("mo", dirs, &created);
  ASSERT_TRUE(study) << study.error();
  EXPECT_TRUE(created);
  EXPECT_EQ(study->directions, dirs);
  auto again = s->get_study("mo");
  ASSERT_TRUE(again) << again.error();
  EXPECT_EQ(again->directions, dirs);
  EXPECT_EQ(again->direction, search::Direction::minimize);
  auto other = s->get_or_create_study("mo", search::Direction::minimize, nullptr);
  ASSERT_FALSE(other);
  EXPECT_NE(other.error().message.find("[MINIMIZE, MAXIMIZE]"), std::string::npos) << other.error();
  EXPECT_FALSE(s->get_or_create_study("mo", {search::Direction::maximize, dirs[1]}, nullptr));
  ASSERT_TRUE(s->get_or_create_study("single", search::Direction::maximize, nullptr));
  auto studies = s->get_all_studies();
  ASSERT_TRUE(studies && studies->size() == 2u);
  EXPECT_EQ(studies->at(0).directions, dirs);
  EXPECT_EQ(studies->at(1).directions, std::vector{search::Direction::maximize});

  StudyCache cache(*s, *study);
  ASSERT_TRUE(cache.sync());
  EXPECT_TRUE(cache.is_multi_objective());
  auto t = s->create_trial(study->study_id, search::TrialState::running, {});
  ASSERT_TRUE(t);
  ASSERT_TRUE(cache.sync());
  ASSERT_TRUE(s->set_trial_state_values(t->trial_id, search::TrialState::complete,
                                        std::vector{12.5, 0.875}));
  ASSERT_TRUE(cache.sync());
  ASSERT_EQ(cache.trials().size(), 1u);
  EXPECT_EQ(cache.trials()[0].values, (std::vector{12.5, 0.875}));
  EXPECT_EQ(*cache.trials()[0].value, 12.5);
  auto back = s->get_trial(t->trial_id);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->values, (std::vector{12.5, 0.875}));
}

TEST_P(StorageSuite, ValuesRoundTripExactly) {
  auto s = open();
  auto study = s->get_or_create_study("inf", search::Direction::minimize, nullptr);
  auto t = s->create_trial(study->study_id, search::TrialState::running, {});
  ASSERT_TRUE(s->set_trial_intermediate_value(t->trial_id, 1, -HUGE_VAL));
  ASSERT_TRUE(s->set_trial_intermediate_value(t->trial_id, 2, std::nan("")));
  ASSERT_TRUE(s->set_trial_intermediate_value(t->trial_id, 3, 0.1 + 0.2));
  ASSERT_TRUE(s->set_trial_param(t->trial_id, "x", 1.0 / 3.0,
                                 search::FloatDistribution{0, 1, false, std::nullopt}));
  ASSERT_TRUE(s->set_trial_state_values(t->trial_id, search::TrialState::complete, HUGE_VAL));
  auto back = s->get_trial(t->trial_id);
  EXPECT_EQ(*back->value, HUGE_VAL);
  EXPECT_EQ(back->intermediate_values.at(1), -HUGE_VAL);
  EXPECT_TRUE(std::isnan(back->intermediate_values.at(2)));
  EXPECT_EQ(back->intermediate_values.at(3), 0.1 + 0.2);  // every bit of the double
  EXPECT_EQ(back->params.at("x"), 1.0 / 3.0);
}

TEST_P(StorageSuite, WaitingTrialsArePoppedInOrder) {
  auto s = open();
  auto study = s->get_or_create_study("q", search::Direction::minimize, nullptr);
  auto w0 = s->create_trial(study->study_id, search::TrialState::waiting,
                            {{k_attr_fixed_params, {{"a", 1}}}});
  auto w1 = s->create_trial(study->study_id, search::TrialState::waiting,
                            {{k_attr_fixed_params, {{"a", 2}}}});
  auto p0 = s->pop_waiting_trial(study->study_id);
  ASSERT_TRUE(p0 && *p0);
  EXPECT_EQ((*p0)->trial_id, w0->trial_id);
  auto t = s->get_trial(w0->trial_id);
  EXPECT_EQ(t->state, search::TrialState::running);
  EXPECT_TRUE(t->datetime_start.has_value());
  auto p1 = s->pop_waiting_trial(study->study_id);
  EXPECT_EQ((*p1)->trial_id, w1->trial_id);
  auto none = s->pop_waiting_trial(study->study_id);
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->has_value());
}

TEST_P(StorageSuite, CacheReadsOnlyWhatChanged) {
  auto s = open();
  auto study = s->get_or_create_study("c", search::Direction::minimize, nullptr);
  StudyCache cache(*s, *study);
  auto a = s->create_trial(study->study_id, search::TrialState::running, {});
  ASSERT_TRUE(cache.sync());
  ASSERT_EQ(cache.trials().size(), 1u);
  EXPECT_EQ(cache.trials()[0].state, search::TrialState::running);
  ASSERT_TRUE(s->set_trial_state_values(a->trial_id, search::TrialState::complete, 2.0));
  ASSERT_TRUE(s->create_trial(study->study_id, search::TrialState::running, {}));
  ASSERT_TRUE(cache.sync());
  ASSERT_EQ(cache.trials().size(), 2u);
  EXPECT_EQ(cache.trials()[0].state, search::TrialState::complete);
  EXPECT_EQ(*cache.trials()[0].value, 2.0);
  EXPECT_EQ(cache.trials()[1].number, 1);
}

// A re-measured trial's believed value replaces a COMPLETE trial's value (tuner/judge/reruns.h); any
// other trial is left alone; the replacement counts as the trial's change, which every cache
// reads at its next sync.
TEST_P(StorageSuite, CompleteTrialValueIsReplacedAndReRead) {
  auto s = open();
  auto study = s->get_or_create_study("v", search::Direction::minimize, nullptr);
  StudyCache cache(*s, *study);
  auto a = s->create_trial(study->study_id, search::TrialState::running, {});
  auto b = s->create_trial(study->study_id, search::TrialState::running, {});
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(s->set_trial_state_values(a->trial_id, search::TrialState::complete, 2.0));
  ASSERT_TRUE(cache.sync());
  auto set = s->set_complete_trial_value(a->trial_id, 3.5, "search_value");
  ASSERT_TRUE(set) << set.error();
  EXPECT_TRUE(*set);
  // The value replaced is kept once, in the same transaction: the finished trial takes no
  // attribute write of its own.
  ASSERT_TRUE(s->set_complete_trial_value(a->trial_id, 4.0, "search_value"));
  ASSERT_TRUE(s->set_complete_trial_value(a->trial_id, 3.5, "search_value"));
  EXPECT_EQ(s->get_trial(a->trial_id)->user_attrs.value("search_value", 0.0), 2.0);
  auto refused = s->set_complete_trial_value(b->trial_id, 1.0);  // still RUNNING
  ASSERT_TRUE(refused) << refused.error();
  EXPECT_FALSE(*refused);
  EXPECT_FALSE(s->set_complete_trial_value(999999, 1.0));
  ASSERT_TRUE(cache.sync());
  EXPECT_EQ(*cache.trials()[0].value, 3.5);
  EXPECT_EQ(cache.trials()[0].user_attrs.value("search_value", 0.0), 2.0);
  EXPECT_FALSE(cache.trials()[1].value.has_value());
}

// A trial's state has one owner (issue 25, point 4): once another worker finished it, every
// write to it is refused with an error of kind finished, which the runner tells apart by its
// kind, and nothing of it is stored.
TEST_P(StorageSuite, FinishedTrialRefusesEveryWrite) {
  auto s = open();
  auto study = s->get_or_create_study("frozen", search::Direction::minimize, nullptr);
  auto t = s->create_trial(study->study_id, search::TrialState::running, {});
  ASSERT_TRUE(t);
  ASSERT_TRUE(s->set_trial_user_attr(t->trial_id, "before", 1));
  ASSERT_TRUE(s->set_trial_system_attr(t->trial_id, "fail_reason", "stale: the other worker"));
  ASSERT_TRUE(s->set_trial_state_values(t->trial_id, search::TrialState::fail, std::nullopt));
  const auto expect_refused = [&](const StorageResult<void>& r, std::string_view what) {
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().kind, StorageErrorKind::finished) << r.error();
    EXPECT_EQ(r.error().message, fmt::format("{}: trial id {} is finished (FAIL) and takes no "
                                             "more writes",
                                             what, t->trial_id));
  };
  expect_refused(s->set_trial_user_attr(t->trial_id, "after", 2), "set_trial_user_attr");
  expect_refused(s->set_trial_system_attr(t->trial_id, "fail_reason", "mine"),
                 "set_trial_system_attr");
  expect_refused(s->set_trial_intermediate_value(t->trial_id, 1, 0.5),
                 "set_trial_intermediate_value");
  expect_refused(s->record_heartbeat(t->trial_id), "record_heartbeat");
  expect_refused(s->set_trial_param(t->trial_id, "x", 1.0,
                                    search::FloatDistribution{0, 2, false, std::nullopt}),
                 "set_trial_param");
  TrialUpdate attrs;  // no state: a write like any other
  attrs.user_attrs["after"] = 3;
  auto update = s->update_trial(t->trial_id, attrs);
  ASSERT_FALSE(update);
  EXPECT_EQ(update.error().kind, StorageErrorKind::finished) << update.error();
  auto state = s->set_trial_state_values(t->trial_id, search::TrialState::complete, 1.0);
  ASSERT_TRUE(state) << state.error();
  EXPECT_FALSE(*state);
  auto back = s->get_trial(t->trial_id);
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(back->state, search::TrialState::fail);
  EXPECT_EQ(back->user_attrs, nlohmann::json({{"before", 1}}));
  EXPECT_EQ(back->system_attrs.value("fail_reason", ""), "stale: the other worker");
  EXPECT_TRUE(back->intermediate_values.empty());
  EXPECT_TRUE(back->params.empty());
  EXPECT_FALSE(back->value.has_value());
}

// A trial or study with no row is an error of kind missing, whatever the call (the runner drops
// a trial whose row is gone by that kind); the message names it as before. Any other refusal
// (a study with other directions) is of kind other.
TEST_P(StorageSuite, MissingTrialOrStudyIsKindMissing) {
  auto s = open();
  auto study = s->get_or_create_study("kinds", search::Direction::minimize, nullptr);
  ASSERT_TRUE(study) << study.error();
  constexpr std::int64_t k_none = 987654;
  const auto expect_missing = [](const auto& r, const std::string& message) {
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().kind, StorageErrorKind::missing) << r.error();
    EXPECT_EQ(r.error().message, message);
  };
  const std::string trial_gone = fmt::format("trial id {} does not exist", k_none);
  expect_missing(s->get_trial(k_none), trial_gone);
  expect_missing(s->trial_liveness(k_none), trial_gone);
  expect_missing(s->set_trial_user_attr(k_none, "a", 1), trial_gone);
  expect_missing(s->record_heartbeat(k_none), trial_gone);
  expect_missing(s->set_trial_state_values(k_none, search::TrialState::complete, 1.0), trial_gone);
  expect_missing(s->update_trial(k_none, TrialUpdate{}), trial_gone);
  expect_missing(s->set_complete_trial_value(k_none, 1.0), trial_gone);
  expect_missing(s->create_trial(k_none, search::TrialState::running, {}),
                 fmt::format("study id {} does not exist", k_none));
  auto no_study = s->get_study("no such study");
  ASSERT_FALSE(no_study);
  EXPECT_EQ(no_study.error().kind, StorageErrorKind::missing) << no_study.error();
  EXPECT_TRUE(no_study.error().message.starts_with("no study named 'no such study' in "))
      << no_study.error();

  auto other = s->get_or_create_study("kinds", search::Direction::maximize, nullptr);
  ASSERT_FALSE(other);
  EXPECT_EQ(other.error().kind, StorageErrorKind::other) << other.error();
  // The project's Result<T> carries the message alone.
  const Result<StudyInfo> plain = to_result(std::move(other));
  ASSERT_FALSE(plain);
  EXPECT_TRUE(plain.error().starts_with("study 'kinds' in ")) << plain.error();
}

// Writers on their own connections, as separate processes or hosts would be: every number once,
// every WAITING trial popped by exactly one of them.
TEST_P(StorageSuite, ConcurrentWritersGetDistinctNumbersAndPops) {
  constexpr int k_writers = 3, k_per_writer = 30, k_waiting = 30;
  {
    auto s = open();
    auto study = s->get_or_create_study("par", search::Direction::minimize, nullptr);
    ASSERT_TRUE(study);
    for (int i = 0; i < k_waiting; ++i) {
      ASSERT_TRUE(s->create_trial(study->study_id, search::TrialState::waiting, {}));
    }
  }
  std::vector<std::vector<int>> numbers(k_writers);
  std::vector<std::vector<std::int64_t>> popped(k_writers);
  std::vector<std::thread> writers;
  for (int w = 0; w < k_writers; ++w) {
    writers.emplace_back([&, w] {
      auto s = open_storage(m_url);
      ASSERT_TRUE(s) << s.error();
      auto study = (*s)->get_or_create_study("par", search::Direction::minimize, nullptr);
      ASSERT_TRUE(study) << study.error();
      for (int i = 0; i < k_per_writer; ++i) {
        auto p = (*s)->pop_waiting_trial(study->study_id);
        ASSERT_TRUE(p) << p.error();
        if (*p) popped[w].push_back((*p)->trial_id);
        auto t = (*s)->create_trial(study->study_id, search::TrialState::running, {});
        ASSERT_TRUE(t) << t.error();
        numbers[w].push_back(t->number);
        ASSERT_TRUE((*s)->set_trial_state_values(t->trial_id, search::TrialState::complete, i));
      }
    });
  }
  for (auto& t : writers) t.join();
  std::set<int> all;
  std::set<std::int64_t> pops;
  std::size_t pop_count = 0;
  for (const auto& v : numbers) all.insert(v.begin(), v.end());
  for (const auto& v : popped) {
    pops.insert(v.begin(), v.end());
    pop_count += v.size();
  }
  EXPECT_EQ(all.size(), std::size_t{k_writers * k_per_writer});
  EXPECT_EQ(*all.begin(), k_waiting);
  EXPECT_EQ(*all.rbegin(), k_waiting + k_writers * k_per_writer - 1);
  EXPECT_EQ(pops.size(), std::size_t{k_waiting});
  EXPECT_EQ(pop_count, std::size_t{k_waiting});
}

// The cache's delta (issue 27): several writers on their own connections change a study (and
// another study in the same database) at random, as workers would; after every sync the cache
// holds what a full read holds: every trial, its state and value; a finished trial whole; an
// unfinished one with the params it runs. A sync reads only the changed trials: its change log
// names them, and a sync after writes that count as no change (heartbeats, intermediate values,
// attributes of a running trial) names none.
TEST_P(StorageSuite, CacheDeltaEqualsAFullRead) {
  auto reader = open();
  auto study = reader->get_or_create_study("delta", search::Direction::minimize, nullptr);
  ASSERT_TRUE(study);
  std::vector<std::unique_ptr<Storage>> writers;
  for (int w = 0; w < 3; ++w) writers.push_back(open());
  auto other = writers[0]->get_or_create_study("other", search::Direction::minimize, nullptr);
  ASSERT_TRUE(other);
  StudyCache cache(*reader, *study);
  search::ChangeCursor cursor;
  std::mt19937 rng(27);
  std::vector<std::int64_t> unfinished, complete;
  const search::FloatDistribution dist{0, 10, false, std::nullopt};
  const auto expect_equal = [&] {
    ASSERT_TRUE(cache.sync());
    auto all = reader->get_all_trials(study->study_id);
    ASSERT_TRUE(all) << all.error();
    ASSERT_EQ(cache.trials().size(), all->size());
    for (std::size_t i = 0; i < all->size(); ++i) {
      const auto& want = (*all)[i];
      const auto& got = cache.trials()[i];
      ASSERT_EQ(got.trial_id, want.trial_id);
      EXPECT_EQ(got.number, want.number);
      EXPECT_EQ(got.state, want.state) << "trial " << want.number;
      EXPECT_EQ(got.value, want.value) << "trial " << want.number;
      EXPECT_EQ(got.params, want.params) << "trial " << want.number;
      if (!want.is_finished()) continue;
      EXPECT_EQ(got.user_attrs, want.user_attrs) << "trial " << want.number;
      EXPECT_EQ(got.system_attrs, want.system_attrs) << "trial " << want.number;
      EXPECT_EQ(got.intermediate_values, want.intermediate_values) << "trial " << want.number;
      EXPECT_EQ(got.constraints, want.constraints) << "trial " << want.number;
    }
    EXPECT_EQ(cache.waiting(),
              static_cast<std::size_t>(std::ranges::count_if(
                  *all, [](const auto& t) { return t.state == search::TrialState::waiting; })));
  };
  for (int step = 0; step < 150; ++step) {
    Storage& s = *writers[rng() % writers.size()];
    const int op = static_cast<int>(rng() % 8);
    if (op == 0 || unfinished.empty()) {
      const bool waiting = rng() % 4 == 0;
      auto t = s.create_trial(rng() % 5 == 0 ? other->study_id : study->study_id,
                              waiting ? search::TrialState::waiting : search::TrialState::running,
                              {{"owner", static_cast<int>(step)}});
      ASSERT_TRUE(t) << t.error();
      unfinished.push_back(t->trial_id);
    } else if (op == 1) {
      ASSERT_TRUE(s.pop_waiting_trial(study->study_id));
    } else if (op == 2 || op == 3) {
      const auto id = unfinished[rng() % unfinished.size()];
      TrialUpdate u;
      u.system_attrs["sampler"] = step;
      u.params.push_back({"x", static_cast<double>(step % 10), dist});
      auto r = s.update_trial(id, u);
      ASSERT_TRUE(r || r.error().kind == StorageErrorKind::finished) << r.error();
    } else if (op == 4) {
      const auto k = rng() % unfinished.size();
      TrialUpdate end;
      end.user_attrs["wall_time"] = 0.5 * step;
      end.system_attrs["constraints"] = nlohmann::json::array({-1.0});
      end.intermediate_values[1] = step;
      end.state = rng() % 3 ? search::TrialState::complete : search::TrialState::fail;
      if (end.state == search::TrialState::complete) end.values = TrialValues(step * 0.25);
      ASSERT_TRUE(s.update_trial(unfinished[k], end));
      if (end.state == search::TrialState::complete) complete.push_back(unfinished[k]);
      unfinished.erase(unfinished.begin() + static_cast<std::ptrdiff_t>(k));
    } else if (op == 5 && !complete.empty()) {
      ASSERT_TRUE(s.set_complete_trial_value(complete[rng() % complete.size()], step, "kept"));
    } else {
      // Writes that count as no change: a running trial's heartbeat, curve and attributes.
      const auto id = unfinished[rng() % unfinished.size()];
      const auto t = reader->get_trial(id);
      ASSERT_TRUE(t) << t.error();
      if (t->state == search::TrialState::running) {
        ASSERT_TRUE(cache.sync());  // what changed before
        ASSERT_TRUE(s.record_heartbeat(id));
        ASSERT_TRUE(s.set_trial_intermediate_value(id, step, 1.0));
        ASSERT_TRUE(s.set_trial_user_attr(id, "note", step));
        cursor = cache.cursor();  // the writes above are in no sync yet
        ASSERT_TRUE(cache.sync());
        const auto changed = cache.changes_since(cursor);
        ASSERT_TRUE(changed.has_value());
        EXPECT_TRUE(changed->empty()) << "a sync after no change read " << changed->size();
      }
    }
    if (rng() % 3 == 0) expect_equal();
  }
  // Every unfinished trial ends: then the cache holds the whole study, finished, as stored.
  for (const auto id : unfinished) {
    TrialUpdate end;
    end.state = search::TrialState::complete;
    end.values = TrialValues(1.0);
    ASSERT_TRUE(writers[0]->update_trial(id, end));
  }
  expect_equal();
  cursor = cache.cursor();
  ASSERT_TRUE(cache.sync());
  EXPECT_TRUE(cache.changes_since(cursor)->empty());
}

// One `OR trial_id = ?` per unfinished trial hit SQLite's expression depth limit at 1,000.
TEST_P(StorageSuite, CacheSyncsWithThousandsOfUnfinishedTrials) {
  auto s = open();
  auto study = s->get_or_create_study("many", search::Direction::minimize, nullptr);
  constexpr int k_waiting = 1500;
  for (int i = 0; i < k_waiting; ++i) {
    ASSERT_TRUE(s->create_trial(study->study_id, search::TrialState::waiting, {}));
  }
  StudyCache cache(*s, *study);
  ASSERT_TRUE(cache.sync());
  ASSERT_EQ(cache.trials().size(), static_cast<std::size_t>(k_waiting));
  auto popped = s->pop_waiting_trial(study->study_id);
  ASSERT_TRUE(popped && *popped);
  ASSERT_TRUE(s->set_trial_state_values((*popped)->trial_id, search::TrialState::complete, 1.0));
  auto again = cache.sync();
  ASSERT_TRUE(again) << again.error();
  EXPECT_EQ(cache.trials()[0].state, search::TrialState::complete);
  EXPECT_EQ(cache.trials()[1].state, search::TrialState::waiting);
  EXPECT_EQ(cache.trials().size(), static_cast<std::size_t>(k_waiting));
}

// Timestamps are UTC: a heartbeat written in one time zone is seconds old in another, 24 hours
// away; the trial's start reads back as the instant it was.
TEST_P(StorageSuite, TimestampsAreUtcWhateverTheTimeZone) {
  auto s = open();
  auto study = s->get_or_create_study("tz", search::Direction::minimize, nullptr);
  std::int64_t trial_id = -1;
  const auto before = std::chrono::system_clock::now();
  {
    ScopedTimeZone west("America/Adak");
    auto t = s->create_trial(study->study_id, search::TrialState::running, {});
    ASSERT_TRUE(t);
    trial_id = t->trial_id;
    ASSERT_TRUE(s->record_heartbeat(trial_id));
  }
  ScopedTimeZone east("Pacific/Kiritimati");
  auto life = s->trial_liveness(trial_id);
  ASSERT_TRUE(life) << life.error();
  ASSERT_TRUE(life->since_heartbeat_s && life->since_start_s);
  EXPECT_LT(std::abs(*life->since_heartbeat_s), 60.0);
  EXPECT_LT(std::abs(*life->since_start_s), 60.0);
  auto t = s->get_trial(trial_id);
  ASSERT_TRUE(t && t->datetime_start);
  EXPECT_LT(std::abs(std::chrono::duration<double>(*t->datetime_start - before).count()), 60.0);
}

// A trial starts with a heartbeat (created RUNNING or popped), so a tune that dies before the
// launch still leaves a trial that ages; a WAITING trial has neither heartbeat nor start.
TEST_P(StorageSuite, RunningTrialsStartWithAHeartbeat) {
  auto s = open();
  auto study = s->get_or_create_study("hb", search::Direction::minimize, nullptr);
  auto running = s->create_trial(study->study_id, search::TrialState::running, {});
  auto waiting = s->create_trial(study->study_id, search::TrialState::waiting, {});
  auto r = s->trial_liveness(running->trial_id);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->since_heartbeat_s.has_value());
  auto w = s->trial_liveness(waiting->trial_id);
  ASSERT_TRUE(w);
  EXPECT_FALSE(w->since_heartbeat_s.has_value());
  EXPECT_FALSE(w->since_start_s.has_value());
  ASSERT_TRUE(s->pop_waiting_trial(study->study_id));
  w = s->trial_liveness(waiting->trial_id);
  EXPECT_TRUE(w->since_heartbeat_s.has_value());
  EXPECT_TRUE(w->since_start_s.has_value());
  EXPECT_FALSE(s->trial_liveness(12345));
}

}  // namespace tune::tuner
