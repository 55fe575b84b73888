// SPDX-License-Identifier: Apache-2.0
// A bounded stand-in for libFuzzer's main(), built with the normal compiler so that every
// build exercises the fuzz targets under ctest:
//   <target>_replay [--random N] [--seed S] PATH...
// feeds every file under each PATH (a file or a directory, not recursive) to
// LLVMFuzzerTestOneInput, then N (default 1000) inputs derived from them by random byte
// edits, insertions, truncations and splices, plus purely random ones. Deterministic for a
// given seed. A target reports a bug by crashing or aborting, as under libFuzzer.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

using Bytes = std::vector<std::uint8_t>;

Bytes read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

Bytes mutate(const std::vector<Bytes>& seeds, std::mt19937_64& rng) {
  auto pick = [&](std::size_t n) { return n == 0 ? 0 : static_cast<std::size_t>(rng() % n); };
  Bytes out = seeds.empty() ? Bytes{} : seeds[pick(seeds.size())];
  const int edits = 1 + static_cast<int>(pick(8));
  for (int e = 0; e < edits; ++e) {
    switch (pick(6)) {
      case 0:  // flip a byte
        if (!out.empty()) out[pick(out.size())] = static_cast<std::uint8_t>(rng());
        break;
      case 1:  // insert a byte (often an interesting one)
      {
        static const std::uint8_t kInteresting[] = {'\r', '\n', '*', '$', ':', '+', '-', '%',
                                                    '~', '>', '_', '#', ',', '(', '=', '0',
                                                    '9', '@', '/', '?', '&', '%', 0, 0xff};
        const std::uint8_t b = pick(2) ? kInteresting[pick(sizeof kInteresting)]
                                       : static_cast<std::uint8_t>(rng());
        out.insert(out.begin() + static_cast<std::ptrdiff_t>(pick(out.size() + 1)), b);
        break;
      }
      case 2:  // truncate
        out.resize(pick(out.size() + 1));
        break;
      case 3:  // splice in part of another seed
        if (!seeds.empty()) {
          const Bytes& other = seeds[pick(seeds.size())];
          const std::size_t from = pick(other.size() + 1);
          const std::size_t len = pick(other.size() - from + 1);
          out.insert(out.begin() + static_cast<std::ptrdiff_t>(pick(out.size() + 1)),
                     other.begin() + static_cast<std::ptrdiff_t>(from),
                     other.begin() + static_cast<std::ptrdiff_t>(from + len));
        }
        break;
      case 4:  // repeat a chunk
        if (!out.empty()) {
          const std::size_t from = pick(out.size());
          const std::size_t len = std::min<std::size_t>(pick(16) + 1, out.size() - from);
          Bytes chunk(out.begin() + static_cast<std::ptrdiff_t>(from),
                      out.begin() + static_cast<std::ptrdiff_t>(from + len));
          out.insert(out.begin() + static_cast<std::ptrdiff_t>(from), chunk.begin(), chunk.end());
        }
        break;
      default:  // replace with pure noise
        out.resize(pick(64));
        for (auto& b : out) b = static_cast<std::uint8_t>(rng());
        break;
    }
  }
  if (out.size() > 4096) out.resize(4096);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  long random_inputs = 1000;
  std::uint64_t seed = 20240601;
  std::vector<Bytes> seeds;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--random" && i + 1 < argc) {
      random_inputs = std::stol(argv[++i]);
    } else if (arg == "--seed" && i + 1 < argc) {
      seed = std::stoull(argv[++i]);
    } else if (std::filesystem::is_directory(arg)) {
      std::vector<std::filesystem::path> files;
      for (const auto& entry : std::filesystem::directory_iterator(arg)) {
        if (entry.is_regular_file()) files.push_back(entry.path());
      }
      std::sort(files.begin(), files.end());
      for (const auto& f : files) seeds.push_back(read_file(f));
    } else if (std::filesystem::is_regular_file(arg)) {
      seeds.push_back(read_file(arg));
    } else {
      std::cerr << "replay: no such file or directory: " << arg << "\n";
      return 2;
    }
  }
  for (const auto& s : seeds) LLVMFuzzerTestOneInput(s.data(), s.size());
  std::mt19937_64 rng(seed);
  for (long n = 0; n < random_inputs; ++n) {
    const Bytes input = mutate(seeds, rng);
    LLVMFuzzerTestOneInput(input.data(), input.size());
  }
  std::cout << "replay: " << seeds.size() << " seed inputs and " << random_inputs
            << " derived inputs, no failure\n";
  return 0;
}
