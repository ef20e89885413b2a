// Text rules every room shares: bytes from a trial, the study file or the database made safe to
// store, print or hand to a shell (printable, terminal_text, shell_quote, bash_quote), bounded
// file tails, names and durations checked or parsed. Stateless; thread-safe.
// Design: docs/design-notes.md#tunerbasetexth
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "tuner/base/result.h"

namespace tune::tuner {

// Valid UTF-8 kept; each invalid byte becomes U+FFFD; control characters (newline included)
// become \xNN; cut to at most `max_bytes` bytes on a character boundary, with "..." appended
// when anything was cut.
std::string printable(std::string_view bytes, std::size_t max_bytes = std::string::npos);

// `text` as a name any scheduler, file system or database takes: every byte other than an ASCII
// letter, digit, '.', '_' or '-' becomes '_', then cut to at most `max_bytes` (job names, a study
// name taken from a script's file name).
std::string plain_name(std::string_view text, std::size_t max_bytes);

// `text` with every control character (tab and newline included) written as \xNN and all other
// bytes kept as they are: for a name or value from the study file echoed in a one-line message.
std::string escape_controls(std::string_view text);

// `text` as a terminal may receive it, whatever its source (the study file, the database, a
// trial): valid UTF-8 kept; each invalid byte becomes U+FFFD; newline kept; every other C0
// control (tab, ESC, BEL, CR), DEL and each C1 control (U+0080..U+009F, which some terminals obey
// too) written as \xNN or \u00NN, so an `ESC ]0;...BEL` retitles nothing and an `ESC [2J` clears
// nothing. Idempotent. The one filter of every terminal output: the live lines, the end-of-run
// block, `tune trials`, `tune best`, the text report.
std::string terminal_text(std::string_view text);

// Whether `text` holds a control character (below 0x20, or 0x7f).
bool has_control_char(std::string_view text);

// The last `max_bytes` bytes of a file (all of it when smaller); empty when unreadable.
std::string tail_of_file(const std::string& path, std::size_t max_bytes);

// Why a program failed, from the last 64 KiB of its stderr: the lines that say so (error, failed,
// unable, refused, ...; the first two and the last when there are more than three), joined by
// " | ", through printable(max_bytes). Launchers print the cause first and a banner after it
// (Open MPI: "Host key verification failed." then a box of dashes), so the last line alone
// would hide it. Lines with no letter or digit (banners, rules) never count. Lines inside a help
// box (between rules of 20 or more dashes, as Open MPI prints its errors) are mostly advice: of a
// box only the first one's headline and up to three of its "Key: value" details count ("The
// specified binding policy is not recognized: | Policy: bogus"), after the lines outside boxes
// that explain, and only when its headline explains or nothing outside does. Without any of
// these: the last line that has a letter or digit.
std::string explaining_lines_of_file(const std::string& path, std::size_t max_bytes);
// The same over text already read (e.g. what a node's sampler printed).
std::string explaining_lines(std::string_view text, std::size_t max_bytes);

// `text` as one POSIX shell word: kept as it is when it is made of safe characters
// ([A-Za-z0-9_@+=:,./-]) and `force` is false, else single-quoted with each ' written '\''.
// Every value a remote shell gets goes through it, and bash_quote's.
std::string shell_quote(std::string_view text, bool force = false);

// `text` as one bash word: shell_quote's, except where terminal_text would change it (a control
// character other than newline, a C1 control, an invalid byte): then ANSI-C quoted, $'...', with
// every such byte and every non-ASCII byte written \xNN, so bash reads the very bytes and a
// terminal showing the script obeys none. Every value an exported script gets goes through it.
std::string bash_quote(std::string_view text, bool force = false);

// POSIX's portable environment variable name ([A-Za-z_][A-Za-z0-9_]*): the only names a shell
// can export or unset, so the study file (env:) and `tune export` accept no other.
bool is_env_var_name(std::string_view name);

// The flag an argument sets: "--threads" for "--threads" and "--threads=2"; "" for a value.
std::string flag_name(const std::string& arg);

// `text` on one line: each newline or carriage return becomes a space, every other control
// character and invalid byte is written as terminal_text writes it, trailing spaces are dropped
// (a library's error message, a name or path written into a script's comment, which a terminal
// showing the script must not obey).
std::string one_line(std::string_view text);

// `text` when it is a plain positive decimal integer ("4"); nullopt for anything else ("",
// "0", "-2", "4x", "{ranks}": a value known only once a trial's template is expanded).
std::optional<int> positive_int(std::string_view text);

// The number under `key` of a JSON object (a trial's attribute, a log entry: untrusted) when it
// is a finite number; nullopt when `object` is no object, the key is missing, or the value is
// another type, NaN or infinite.
std::optional<double> finite_number_at(const nlohmann::json& object, const std::string& key);

// `text` with ASCII letters in lower case (other bytes as they are).
std::string ascii_lower(std::string_view text);

// "3 runs", "1 run": `n` and the word for that many.
std::string plural(int n, std::string_view one, std::string_view many);

// "90", "90s", "1.5m", "2h", "250ms" -> seconds; an error naming the text otherwise, also for
// a duration over k_max_duration_s, whose deadline the clocks could not hold.
inline constexpr double k_max_duration_s = 1e9;
Result<double> parse_duration(const std::string& text);

// `text` as comment lines of at most ~96 columns: the first starts with `first`, the rest with
// `rest` ("#  ", "#    "), each word after a space.
std::string comment_lines(const std::string& text, const std::string& first,
                          const std::string& rest);

}  // namespace tune::tuner
