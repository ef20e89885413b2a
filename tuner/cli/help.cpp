// What every command of the `tune` command line shares: the "Usage:" lines CLI11 cannot spell
// itself, each command's "Examples:" footer, `tune help`'s list of commands, the answer to a word
// that is neither a command nor a study file, and the renamed flags refused with their new name.
#include <CLI/CLI.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "tuner/base/text.h"
#include "tuner/cli/subcommands.h"
#include "tuner/cli/suggest.h"

namespace tune::tuner {
namespace {

// CLI11's formatter, with a fixed "Usage:" text for the apps given one. One instance serves the
// root app and every subcommand: a subcommand takes its parent's formatter when it is added.
class TuneFormatter : public CLI::Formatter {
 public:
  void set_usage(const CLI::App* app, std::string usage) { m_usage[app] = std::move(usage); }

  std::string make_usage(const CLI::App* app, std::string name) const override {
    const auto it = m_usage.find(app);
    return it == m_usage.end() ? CLI::Formatter::make_usage(app, std::move(name)) : it->second;
  }

  // CLI11's, less the second blank line it leaves after the options when a hidden one (a renamed
  // flag's) comes last.
  std::string make_help(const CLI::App* app, std::string name,
                        CLI::AppFormatMode mode) const override {
    std::string text = CLI::Formatter::make_help(app, std::move(name), mode);
    for (auto at = text.find("\n\n\n"); at != std::string::npos; at = text.find("\n\n\n", at))
      text.erase(at, 1);
    return text;
  }

 private:
  std::map<const CLI::App*, std::string> m_usage;
};

TuneFormatter& formatter_of(const CLI::App& app) {
  auto formatter = std::dynamic_pointer_cast<TuneFormatter>(app.get_formatter());
  if (!formatter) throw std::logic_error(app.get_name() + ": its app has no use_tune_formatter()");
  return *formatter;
}

std::vector<const CLI::App*> named_commands(const CLI::App& app) {
  return app.get_subcommands([](const CLI::App* sub) { return !sub->get_name().empty(); });
}

}  // namespace

void use_tune_formatter(CLI::App& app) { app.formatter(std::make_shared<TuneFormatter>()); }

void set_usage(CLI::App* app, const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& line : lines) text += (text.empty() ? "Usage: " : "       ") + line + '\n';
  formatter_of(*app).set_usage(app, std::move(text));
}

void set_help_footer(CLI::App* app, const std::vector<Example>& examples,
                     const std::string& notes) {
  std::string text = notes.empty() ? "" : notes + "\n\n";
  text += "Examples:";
  for (const auto& e : examples) text += fmt::format("\n  {}\n      {}", e.command, e.what);
  app->footer(text);
}

void add_renamed_flag(CLI::App* app, const std::string& old_name, const std::string& message) {
  // Its value optional, so that a bare one gets the same error. Hidden (group ""); the
  // description holds the error, as only refuse_renamed_flags reads it.
  app->add_option(old_name)->description(message)->expected(0, 1)->group("");
}

void refuse_renamed_flags(const CLI::App& app) {
  for (const auto* opt : app.get_options()) {
    if (opt->get_group().empty() && opt->count() > 0)
      throw BadInput(fmt::format("--{} {}", opt->get_lnames().front(), opt->get_description()));
  }
  for (const auto* sub : app.get_subcommands()) refuse_renamed_flags(*sub);
}

std::vector<std::string> command_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const auto* sub : named_commands(app)) names.push_back(sub->get_name());
  return names;
}

std::string command_list(const CLI::App& app) {
  std::ostringstream out;
  out << app.get_description() << "\n\n"
      << formatter_of(app).make_usage(&app, app.get_name()) << "\nCommands:\n";
  const auto commands = named_commands(app);
  std::size_t width = 0;
  for (const auto* sub : commands) width = std::max(width, sub->get_name().size());
  for (const auto* sub : commands)
    out << fmt::format("  {:<{}}  {}\n", sub->get_name(), width, sub->get_description());
  out << "\n`tune help COMMAND` (or `tune COMMAND --help`) prints a command's options and "
         "examples;\n"
         "`tune --help` the options of a study run.\n";
  return out.str();
}

std::string unknown_command_message(const CLI::App& app, const std::string& word,
                                    bool could_be_study) {
  const std::string shown = escape_controls(word);
  if (auto near = nearest_name(word, command_names(app)))
    return fmt::format("unknown command '{}'; did you mean '{}'? (tune help lists the commands)",
                       shown, *near);
  return fmt::format("unknown command '{}'{} (tune help lists the commands)", shown,
                     could_be_study ? " and no study file of that name" : "");
}

}  // namespace tune::tuner
