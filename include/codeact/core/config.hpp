// Configuration files: YAML read into Json, with ${VAR} and ${VAR:-default} interpolation from
// the environment, and the seed's search order for app_conf.yml / agent_prompts.yml.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "codeact/core/json.hpp"
#include "codeact/core/result.hpp"

namespace codeact::core {

using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;

// The process environment.
std::optional<std::string> getenv_string(const std::string& name);

// Parses YAML text into Json (scalars that read as int, float or bool become numbers and bools,
// quoted scalars stay strings). InvalidArgument with line and column on a syntax error.
Result<Json> parse_yaml(const std::string& text, const std::string& what = "YAML");
Result<Json> load_yaml_file(const std::string& path);

// Replaces ${VAR} and ${VAR:-default} in every string of `value`. An unset variable without a
// default is an InvalidArgument naming the variable and the JSON path where it appears; `$$`
// is a literal `$`.
Result<Json> interpolate_env(const Json& value, const EnvLookup& env = getenv_string);
Result<std::string> interpolate_string(const std::string& text,
                                       const EnvLookup& env = getenv_string,
                                       const std::string& where = "");

// The seed's search order: `explicit_path` if given (must exist), then the file named by the
// environment variable `env_var`, then ./<file_name>, ~/.config/codeact/<file_name>,
// /etc/codeact/<file_name>. NotFound lists every place looked at.
Result<std::string> find_config_file(const std::string& file_name, const std::string& env_var,
                                     const std::string& explicit_path = "");

// codeact's data directory: $CODEACT_HOME, else $XDG_DATA_HOME/codeact, else
// ~/.local/share/codeact. Created on first use.
std::string data_dir();

}  // namespace codeact::core
