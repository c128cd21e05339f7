// kopt: the KernelOptimizer command-line tool. main() only hands over to App.
#include "cli/app.h"

int main(int argc, char** argv) { return kopt::cli::App().run(argc, argv); }
