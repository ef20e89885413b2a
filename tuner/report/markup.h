// Text from anywhere (a study file, the database, a trial) made inert where it lands in a report:
// HTML text and attributes, Markdown paragraphs and cells, Markdown code spans. The one place the
// reports escape markup. Stateless; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace tune::tuner {

// Markup characters (& < > " ') as entities; control bytes and invalid UTF-8 as terminal_text
// (tuner/base/text.h) writes them, so they show: for HTML text and quoted attribute values.
std::string html_text(std::string_view raw);

// `text` (a name, a choice, a reason: anything from the study file, the database or a trial) as
// literal Markdown in a paragraph, heading or table cell: control bytes shown (terminal_text),
// newlines as spaces, the punctuation Markdown gives a meaning (\ ` * _ { } [ ] ( ) # + - . ! |)
// backslash-escaped, and `<`, `>`, `&`, `~` written as character references, so no raw HTML, link,
// emphasis or cell break passes through any renderer (CommonMark, GFM, Python-Markdown).
std::string markdown_text(std::string_view text);
// `text` as a Markdown code span: control bytes shown, newlines as spaces, fenced by one backtick
// more than its longest run of them (padded with spaces when it starts or ends with one). The
// renderer escapes the span's HTML itself.
std::string markdown_code(std::string_view text);

// One of tune's own sentences, whose `command` spans are Markdown code and which may quote a name
// (an objective, a unit): outside the spans no raw HTML, no cell break.
std::string markdown_sentence(std::string_view text);

}  // namespace tune::tuner
