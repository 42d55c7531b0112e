#include "codeact/core/files.hpp"

#include <fstream>

namespace codeact::core {

std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace codeact::core
