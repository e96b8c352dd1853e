// Minimal command-line parsing for the cortex subcommands: --name value and
// --flag forms, every option declared with help text so --help and error
// messages come from one table.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cortex::cli {

struct option_spec {
  std::string name;      // without leading dashes
  std::string value;     // value placeholder ("N", "PATH"); empty for a flag
  std::string help;
  std::string fallback;  // default shown in --help; empty if none
};

class args {
 public:
  // `program` prefixes the command in usage lines ("cortex generate"); empty
  // for a program of its own ("cortexd").
  args(std::string command, std::string summary, std::vector<option_spec> specs, std::string program = "cortex")
      : command_(program.empty() ? std::move(command) : program + " " + command),
        summary_(std::move(summary)),
        specs_(std::move(specs)) {}

  // Parses argv (after the subcommand). Returns false with error() set on an
  // unknown option or a missing value; sets help_requested() for -h/--help.
  bool parse(int argc, char** argv);
  bool help_requested() const { return help_; }
  const std::string& error() const { return error_; }
  std::string usage() const;

  bool has(const std::string& name) const { return values_.count(name) > 0; }
  std::string get(const std::string& name) const;  // value or declared default
  // Typed getters: nullopt + error() when the value does not parse.
  std::optional<long long> get_int(const std::string& name);
  std::optional<double> get_float(const std::string& name);

 private:
  const option_spec* find(const std::string& name) const;
  std::string command_, summary_;
  std::vector<option_spec> specs_;
  std::map<std::string, std::string> values_;
  bool help_ = false;
  std::string error_;
};

}  // namespace cortex::cli
