// SPDX-License-Identifier: MIT
// floodgate_xdp_lines: where each source line of a loaded BPF program begins in its JIT
// image, for scripts/profile_xdp.sh to put perf's samples on source lines. Prints, sorted by
// address, one line per line-info record: "address<TAB>file:line<TAB>source text", the
// address as 16 lowercase hex digits (as `perf script -F ip` prints it); with --functions,
// "start<TAB>end" of each of the program's functions instead (end excluded). What bpftool's
// JIT dump would give, where bpftool is built without a disassembler (Debian's: no libbfd).
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

namespace {

struct Line {
  uint64_t address;
  std::string where;
  std::string text;
};

int fail(const std::string& message) {
  std::cerr << "floodgate_xdp_lines: error: " << message << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  uint32_t id = 0;
  CLI::App app{"JIT addresses of a loaded BPF program's source lines"};
  bool functions = false;
  app.add_option("--id", id, "The program's ID (bpftool prog show)")->required();
  app.add_flag("--functions", functions, "Print where each function's image starts and ends");
  CLI11_PARSE(app, argc, argv);

  int fd = bpf_prog_get_fd_by_id(id);
  if (fd < 0) return fail("no program with ID " + std::to_string(id) + " (run as root)");
  bpf_prog_info info{};
  uint32_t size = sizeof(info);
  if (bpf_obj_get_info_by_fd(fd, &info, &size) != 0) return fail("cannot read the program");
  if (info.nr_jited_line_info == 0 || info.nr_line_info != info.nr_jited_line_info) {
    return fail("the program has no line info or is not JIT-compiled");
  }
  std::vector<uint64_t> addresses(info.nr_jited_line_info);
  std::vector<uint64_t> starts(info.nr_jited_ksyms);
  std::vector<uint32_t> lengths(info.nr_jited_func_lens);
  std::vector<bpf_line_info> lines(info.nr_line_info);
  uint32_t btf_id = info.btf_id;
  info = bpf_prog_info{};
  info.nr_jited_line_info = addresses.size();
  info.jited_line_info = reinterpret_cast<uint64_t>(addresses.data());
  info.jited_line_info_rec_size = sizeof(uint64_t);
  info.nr_line_info = lines.size();
  info.line_info = reinterpret_cast<uint64_t>(lines.data());
  info.line_info_rec_size = sizeof(bpf_line_info);
  info.nr_jited_ksyms = starts.size();
  info.jited_ksyms = reinterpret_cast<uint64_t>(starts.data());
  info.nr_jited_func_lens = lengths.size();
  info.jited_func_lens = reinterpret_cast<uint64_t>(lengths.data());
  size = sizeof(info);
  if (bpf_obj_get_info_by_fd(fd, &info, &size) != 0) return fail("cannot read the line info");
  close(fd);
  // the kernel answers with zeros where it hides kernel addresses (kptr_restrict 2)
  if (std::all_of(starts.begin(), starts.end(), [](uint64_t a) { return a == 0; }) ||
      std::all_of(addresses.begin(), addresses.end(), [](uint64_t a) { return a == 0; })) {
    return fail("the kernel hides the program's addresses: set kernel.kptr_restrict to 0 or 1");
  }
  if (functions) {
    for (size_t i = 0; i < starts.size() && i < lengths.size(); ++i) {
      std::printf("%016llx\t%016llx\n", static_cast<unsigned long long>(starts[i]),
                  static_cast<unsigned long long>(starts[i] + lengths[i]));
    }
    return 0;
  }

  btf* types = btf__load_from_kernel_by_id(btf_id);
  if (!types) return fail("cannot read the program's BTF");
  std::vector<Line> out;
  for (size_t i = 0; i < lines.size(); ++i) {
    const char* file = btf__name_by_offset(types, lines[i].file_name_off);
    const char* text = btf__name_by_offset(types, lines[i].line_off);
    std::string where = std::filesystem::path(file ? file : "?").filename().string() + ":" +
                        std::to_string(BPF_LINE_INFO_LINE_NUM(lines[i].line_col));
    std::string source = text ? text : "";
    source.erase(0, source.find_first_not_of(" \t"));
    out.push_back({addresses[i], where, source});
  }
  btf__free(types);
  std::stable_sort(out.begin(), out.end(),
                   [](const Line& a, const Line& b) { return a.address < b.address; });
  for (const Line& line : out) {
    std::printf("%016llx\t%s\t%s\n", static_cast<unsigned long long>(line.address),
                line.where.c_str(), line.text.c_str());
  }
  return 0;
}
