// Technique check for exercise m2.04: Nsight Compute counts the shared-memory bank conflicts.
//
// The other tests check that the kernels compute the right thing; this one checks that they
// do it the way the exercise asks. It runs the exercise's probe program (ncu_probe.cu, built
// against the same version as this test) under
//
//   ncu --clock-control none --metrics l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,
//                                      l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum
//
// once per kernel, and checks that the unpadded kernel (transpose_tiled, gemm_conflicted) has
// many conflicts and the padded one (transpose_padded, gemm_padded) has next to none.
//
// ncu is looked for in $COURSE_NCU, on PATH, next to nvcc and where the installers put it
// (/usr/local/cuda*/, /opt/nvidia/nsight-compute/*/). The test is skipped, with the reason,
// when there is no GPU, no ncu, or ncu may not read the GPU's performance counters (by
// default only root may: see README.md). The last two are yours to fix, so those skips end
// with "; to fix: <command>" (./course doctor checks both too).
#include <gtest/gtest.h>
#include <glob.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "course/testing.h"

#ifndef COURSE_NCU_PROBE
#error "the build passes the path of the probe program as COURSE_NCU_PROBE (see CMakeLists.txt)"
#endif
#ifndef COURSE_CUDA_BIN_DIR
#define COURSE_CUDA_BIN_DIR "/usr/local/cuda/bin"
#endif

namespace {

constexpr const char* kLoadConflicts = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum";
constexpr const char* kStoreConflicts = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum";

// The padded kernels have no conflicts by construction, but the hardware counter also counts
// the rare cycle in which a shared-memory access waits for the data banks behind another
// unit's access. So "none" is "at most 2% of the unpadded kernel's": a 2-way conflict (a row
// stride of 34 words) already gives 1/31, about 3%.
constexpr double kNearZeroFraction = 0.02;

bool is_executable(const std::string& path) {
  return !path.empty() && access(path.c_str(), X_OK) == 0;
}

// The last match of a glob pattern, which for versioned folders is usually the newest.
std::string last_glob_match(const std::string& pattern) {
  glob_t matches{};
  std::string found;
  if (glob(pattern.c_str(), 0, nullptr, &matches) == 0) {
    for (std::size_t i = 0; i < matches.gl_pathc; ++i) {
      if (is_executable(matches.gl_pathv[i])) found = matches.gl_pathv[i];
    }
  }
  globfree(&matches);
  return found;
}

std::string find_ncu() {
  if (const char* chosen = std::getenv("COURSE_NCU"); chosen != nullptr && *chosen != '\0') {
    return is_executable(chosen) ? chosen : "";
  }
  if (const char* path = std::getenv("PATH"); path != nullptr) {
    std::stringstream dirs(path);
    std::string dir;
    while (std::getline(dirs, dir, ':')) {
      if (!dir.empty() && is_executable(dir + "/ncu")) return dir + "/ncu";
    }
  }
  for (const std::string pattern :
       {std::string(COURSE_CUDA_BIN_DIR) + "/ncu", std::string("/usr/local/cuda/bin/ncu"),
        std::string("/usr/local/cuda/nsight-compute*/ncu"),
        std::string("/usr/local/cuda-*/nsight-compute*/ncu"),
        std::string("/opt/nvidia/nsight-compute/*/ncu"),
        std::string("/usr/local/NVIDIA-Nsight-Compute*/ncu")}) {
    const std::string found = last_glob_match(pattern);
    if (!found.empty()) return found;
  }
  return "";
}

std::string sudo() { return geteuid() == 0 ? "" : "sudo "; }

// The package of NVIDIA's CUDA repository that holds ncu for the toolkit this test was built
// with, e.g. cuda-nsight-compute-12-6.
std::string ncu_install_command() {
  return sudo() + "apt-get install cuda-nsight-compute-" + std::to_string(CUDART_VERSION / 1000) +
         "-" + std::to_string(CUDART_VERSION % 1000 / 10);
}

bool is_wsl() {
  std::ifstream release("/proc/sys/kernel/osrelease");
  std::string text;
  std::getline(release, text);
  return text.find("microsoft") != std::string::npos || text.find("Microsoft") != std::string::npos;
}

// Why this user may not read the performance counters, ending with the fix; "" when they may
// (or the driver does not say: ncu will tell). /proc/driver/nvidia/params has
// "RmProfilingAdminOnly: 1" when only root may.
std::string counters_not_permitted(bool ncu_said_so) {
  if (geteuid() == 0) return "";
  std::ifstream params("/proc/driver/nvidia/params");
  bool admin_only = false;
  for (std::string line; std::getline(params, line);) {
    if (line.rfind("RmProfilingAdminOnly:", 0) == 0) {
      admin_only = line.find_first_of("123456789", 21) != std::string::npos;
    }
  }
  if (!admin_only && !ncu_said_so) return "";
  if (is_wsl()) {
    return "ncu may not read the GPU's performance counters here (ERR_NVGPUCTRPERM); to fix: on "
           "Windows, NVIDIA Control Panel > Desktop > Enable Developer Settings, then Developer > "
           "Manage GPU Performance Counters > Allow access to all users";
  }
  return "ncu may not read the GPU's performance counters: only root may (the driver's "
         "RmProfilingAdminOnly; README.md, 'Seeing the conflicts'); to fix: echo 'options nvidia "
         "NVreg_RestrictProfilingToAdminUsers=0' | sudo tee /etc/modprobe.d/ncu.conf && sudo "
         "update-initramfs -u && sudo reboot";
}

// Runs `command` through the shell; returns its exit status and what it printed.
int run_command(const std::string& command, std::string* output) {
  output->clear();
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return -1;
  char buffer[4096];
  std::size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) output->append(buffer, n);
  const int status = pclose(pipe);
  if (status == -1 || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

std::string shell_quote(const std::string& text) {  // for the shell
  std::string result = "'";
  for (char c : text) result += (c == '\'') ? std::string("'\\''") : std::string(1, c);
  return result + "'";
}

std::string tail(const std::string& text, std::size_t chars = 3000) {
  return text.size() <= chars ? text : "..." + text.substr(text.size() - chars);
}

// One line of CSV, with quoted fields ("a","b,c") as ncu writes them.
std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> fields;
  std::string field;
  bool in_quotes = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (in_quotes) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        in_quotes = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      in_quotes = true;
    } else if (c == ',') {
      fields.push_back(field);
      field.clear();
    } else if (c != '\r') {
      field += c;
    }
  }
  fields.push_back(field);
  return fields;
}

// A counter value as ncu prints it ("1015808", or "1,015,808" with digit grouping).
bool parse_count(const std::string& text, double* value) {
  std::string digits;
  for (char c : text) {
    if (c != ',' && c != ' ') digits += c;
  }
  if (digits.empty()) return false;
  char* end = nullptr;
  *value = std::strtod(digits.c_str(), &end);
  return end != nullptr && *end == '\0';
}

bool is_integer(const std::string& text) {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
}

struct Counters {
  std::map<std::string, double> sums;  // metric name -> sum over the profiled kernels
  int kernels = 0;                     // kernel launches ncu profiled
};

// Reads ncu's CSV: one row per (kernel, metric) with the default page (details), or, with
// --page raw, one row per kernel and one column per metric (after a row of units).
Counters parse_ncu_csv(const std::string& output, const std::vector<std::string>& metrics) {
  Counters counters;
  std::vector<std::string> header;
  std::map<std::string, bool> kernel_ids;
  std::stringstream lines(output);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("==", 0) == 0 || line.empty() || line[0] != '"') continue;  // ncu's log
    const std::vector<std::string> fields = split_csv_line(line);
    if (header.empty()) {
      for (const auto& field : fields) {
        if (field == "Kernel Name") header = fields;
      }
      continue;
    }
    if (fields.size() != header.size() || !is_integer(fields[0])) continue;  // units row
    kernel_ids[fields[0]] = true;
    std::map<std::string, std::string> row;
    for (std::size_t i = 0; i < header.size(); ++i) row[header[i]] = fields[i];
    for (const auto& metric : metrics) {
      double value = 0.0;
      if (row.count("Metric Name") != 0) {  // details page
        if (row["Metric Name"] == metric && parse_count(row["Metric Value"], &value)) {
          counters.sums[metric] += value;
        }
      } else if (row.count(metric) != 0 && parse_count(row[metric], &value)) {  // raw page
        counters.sums[metric] += value;
      }
    }
  }
  counters.kernels = static_cast<int>(kernel_ids.size());
  return counters;
}

class NcuBankConflictsTest : public course::GpuTest {
 protected:
  void SetUp() override {
    course::GpuTest::SetUp();
    if (IsSkipped()) return;
    ncu_ = find_ncu();
    if (ncu_.empty()) {
      GTEST_SKIP() << "Nsight Compute (ncu) not found: looked in $COURSE_NCU, on PATH, in "
                   << COURSE_CUDA_BIN_DIR << ", /usr/local/cuda*/ and "
                   << "/opt/nvidia/nsight-compute/*/ (COURSE_NCU=/path/to/ncu names one); "
                   << "to fix: " << ncu_install_command();
    }
    const std::string not_permitted = counters_not_permitted(false);
    if (!not_permitted.empty()) GTEST_SKIP() << not_permitted;
  }

  // Measures the shared-memory bank conflicts (loads + stores) of the probe's kernels for
  // `probe_args` into *conflicts. Returns false when there is no number: with the reason in
  // *skip when ncu cannot measure on this machine, with a test failure otherwise.
  bool measure(const std::string& probe_args, double* conflicts, std::string* skip) {
    const std::string probe = COURSE_NCU_PROBE;
    std::string output;
    // First without ncu: a probe that fails on its own is the kernel's fault, not ncu's.
    if (run_command(shell_quote(probe) + " " + probe_args, &output) != 0) {
      ADD_FAILURE() << "the probe failed: " << probe << " " << probe_args << "\n" << tail(output);
      return false;
    }
    const std::string command = "LC_ALL=C " + shell_quote(ncu_) +
                                " --clock-control none --csv --print-units base" +
                                " --metrics " + kLoadConflicts + "," + kStoreConflicts + " " +
                                shell_quote(probe) + " " + probe_args;
    const int status = run_command(command, &output);
    if (output.find("ERR_NVGPUCTRPERM") != std::string::npos) {
      *skip = counters_not_permitted(true);
      return false;
    }
    for (const char* unavailable : {"not supported", "resource was unavailable"}) {
      if (status != 0 && output.find(unavailable) != std::string::npos) {
        *skip = "ncu cannot profile on this machine:\n" + tail(output, 1000);
        return false;
      }
    }
    const Counters counters = parse_ncu_csv(output, {kLoadConflicts, kStoreConflicts});
    if (counters.kernels == 0 || counters.sums.count(kLoadConflicts) == 0 ||
        counters.sums.count(kStoreConflicts) == 0) {
      ADD_FAILURE() << "could not read the bank-conflict counters from ncu (exit status "
                    << status << "). Command:\n  " << command << "\nOutput:\n" << tail(output);
      return false;
    }
    const double loads = counters.sums.at(kLoadConflicts);
    const double stores = counters.sums.at(kStoreConflicts);
    std::printf("[   ncu    ] %s: %.0f bank conflicts (loads %.0f, stores %.0f), %d kernel(s)\n",
                probe_args.c_str(), loads + stores, loads, stores, counters.kernels);
    *conflicts = loads + stores;
    return true;
  }

  std::string ncu_;
};

TEST_F(NcuBankConflictsTest, PaddedTransposeHasNoneTiledHasMany) {
  const int rows = 1024, cols = 1024;
  const std::string size = " " + std::to_string(rows) + " " + std::to_string(cols);
  double tiled = 0.0, padded = 0.0;
  std::string skip;
  if (!measure("transpose_tiled" + size, &tiled, &skip) ||
      !measure("transpose_padded" + size, &padded, &skip)) {
    if (!skip.empty()) GTEST_SKIP() << skip;
    return;
  }

  // Reading a [32][32] tile down a column is one 32-way conflict (31 extra passes) per warp
  // and 32 elements: about 0.97 conflicts per element.
  const double elements = static_cast<double>(rows) * cols;
  EXPECT_GE(tiled, 0.5 * elements)
      << "transpose_tiled shows few bank conflicts (" << tiled << " for " << elements
      << " elements, expected about 31 per 32): it should stage the block's tile in a "
         "[TILE][TILE] shared array and read it down a column; see TODO(m2.04a) in "
         "month2/04_bank_conflicts/transpose.cu";
  EXPECT_LE(padded, kNearZeroFraction * tiled)
      << "transpose_padded still has bank conflicts (" << padded << ", against " << tiled
      << " for transpose_tiled): the padding should put the 32 words of a tile column in 32 "
         "different banks; see TODO(m2.04b) in month2/04_bank_conflicts/transpose.cu";
}

TEST_F(NcuBankConflictsTest, PaddedGemmHasNoneConflictedHasMany) {
  const int M = 256, N = 256, K = 256;
  const std::string size =
      " " + std::to_string(M) + " " + std::to_string(N) + " " + std::to_string(K);
  double conflicted = 0.0, padded = 0.0;
  std::string skip;
  if (!measure("gemm_conflicted" + size, &conflicted, &skip) ||
      !measure("gemm_padded" + size, &padded, &skip)) {
    if (!skip.empty()) GTEST_SKIP() << skip;
    return;
  }

  // Every read of the transposed B tile is a column read. With scalar loads that is 31
  // conflicts per 32 multiply-adds; the compiler may fetch 4 consecutive k at once (LDS.128),
  // 28 conflicts per 128. Either way far above M * N * K / 16.
  const double multiply_adds = static_cast<double>(M) * N * K;
  EXPECT_GE(conflicted, multiply_adds / 16)
      << "gemm_conflicted shows few bank conflicts (" << conflicted << " for " << multiply_adds
      << " multiply-adds): it should keep the B tile transposed in a [TILE][TILE] array, "
         "Bt[tx][ty] = B[k0 + ty][col], and read Bt[tx][k]; see TODO(m2.04c) in "
         "month2/04_bank_conflicts/gemm_transposed_tile.cu";
  EXPECT_LE(padded, kNearZeroFraction * conflicted)
      << "gemm_padded still has bank conflicts (" << padded << ", against " << conflicted
      << " for gemm_conflicted); see TODO(m2.04d) in "
         "month2/04_bank_conflicts/gemm_transposed_tile.cu";
}

}  // namespace
