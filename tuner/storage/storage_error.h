// StorageError: a failed Storage call's kind (for the caller to branch on) and one-line message
// (for people); StorageResult<T> is what the Storage interface returns. Plain values; thread-safe.
// Design: docs/design-notes.md#tunerstoragestorage_errorh
#pragma once

#include <cstdint>
#include <expected>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "search/trial.h"
#include "tuner/base/result.h"

namespace tune::tuner {

enum class StorageErrorKind {
  other,        // any other failure: a statement the database refused, a schema, a file
  finished,     // the trial is finished and takes no more writes (finished_trial_error())
  missing,      // no such trial, or study (missing_trial_error())
  unreachable,  // the database server did not answer within retry_for, after retries
};

struct StorageError {
  StorageErrorKind kind = StorageErrorKind::other;
  std::string message;

  StorageError(StorageErrorKind k, std::string text) : kind(k), message(std::move(text)) {}
  // A message of no kind (kind `other`); implicit, so that a Result<T>'s error passes as one.
  StorageError(std::string text) : message(std::move(text)) {}
  StorageError(const char* text) : message(text) {}

  // The same error with "what: " before its message, its kind kept.
  [[nodiscard]] StorageError in(std::string_view what) const {
    return {kind, std::string(what) + ": " + message};
  }
  // The trial is no longer its worker's: another worker finished it, or its row is gone.
  bool lost_trial() const {
    return kind == StorageErrorKind::finished || kind == StorageErrorKind::missing;
  }
};

template <typename T>
using StorageResult = std::expected<T, StorageError>;

// The error as the project's Result<T> carries it: its message alone, for a caller that passes
// it up where no one branches on the kind any more.
template <typename T>
[[nodiscard]] Result<T> to_result(StorageResult<T> r) {
  if (!r) return std::unexpected(std::move(r.error().message));
  if constexpr (std::is_void_v<T>) {
    return {};
  } else {
    return std::move(*r);
  }
}

// The message, for streams (gtest's `<< r.error()`).
inline std::ostream& operator<<(std::ostream& out, const StorageError& e) {
  return out << e.message;
}

// A write to a finished trial (kind finished): "trial id 7 is finished (FAIL) and takes no more
// writes".
StorageError finished_trial_error(std::int64_t trial_id, search::TrialState state);
// A read or write of a trial with no row (kind missing): "trial id 7 does not exist". A trial a
// worker holds is gone only where its creation was not durable (synchronous=normal, then a crash
// of the database server or the machine) or someone deleted it: the runner then drops that
// trial and goes on.
StorageError missing_trial_error(std::int64_t trial_id);

}  // namespace tune::tuner
