// kopt_check_layers --table tool/layers.txt --src tool/src: checks every
// quoted include under the source folder against the layer table (layers.h).
#include <iostream>
#include <string>
#include <vector>

#include "layers.h"

int main(int argc, char** argv) {
  return kopt::layers::run(std::vector<std::string>(argv + 1, argv + argc), std::cout, std::cerr);
}
