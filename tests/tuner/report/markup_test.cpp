// report/markup: text from a study file, the database or a trial is inert where a report puts it
// (HTML text and attributes, Markdown paragraphs and cells, code spans), and control bytes show.
#include <gtest/gtest.h>

#include "tuner/report/markup.h"

namespace tune::tuner {
namespace {

TEST(Markup, HtmlTextEscapesMarkupAndQuotesAndShowsControls) {
  EXPECT_EQ(html_text("<script>alert('x & \"y\"')</script>"),
            "&lt;script&gt;alert(&#39;x &amp; &quot;y&quot;&#39;)&lt;/script&gt;");
  EXPECT_EQ(html_text("\x1b]0;title\x07"), "\\x1b]0;title\\x07");
}

TEST(Markdown, TextEscapesEveryCharacterWithAMeaning) {
  EXPECT_EQ(markdown_text("<b>*x*</b> | [l](u) ~~s~~ a\nb"),
            "&lt;b&gt;\\*x\\*&lt;/b&gt; \\| \\[l\\]\\(u\\) &#126;&#126;s&#126;&#126; a b");
  EXPECT_EQ(markdown_text("plain words 12"), "plain words 12");
}

TEST(Markdown, ASentenceKeepsItsCodeSpansAndEscapesTheRest) {
  EXPECT_EQ(markdown_sentence("run `a | b <c>` then <x> | y"),
            "run `a | b <c>` then &lt;x&gt; \\| y");
  EXPECT_EQ(markdown_code("a`b"), "``a`b``");
  EXPECT_EQ(markdown_code("`x"), "`` `x ``");
}

}  // namespace
}  // namespace tune::tuner
