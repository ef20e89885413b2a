// The study report (`tune report`), whole: the model and its statistics (report_model.h,
// tuner/base/stats.h) and the writers that format it (reporter.h). Include the narrower header when
// only one side is needed.
#pragma once

#include "tuner/base/stats.h"           // IWYU pragma: export
#include "tuner/report/report_model.h"  // IWYU pragma: export
#include "tuner/report/reporter.h"      // IWYU pragma: export
