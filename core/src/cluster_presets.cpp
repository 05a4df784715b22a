// Named cluster presets and the parser of SimGrid topology strings, shared by scenario validation and
// the simulator's platform builder.
#include <charconv>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "ddplab/core/error.hpp"
#include "ddplab/core/scenario.hpp"

namespace ddplab {

std::vector<std::vector<unsigned>> parse_topology_spec(std::string_view text) {
  std::vector<std::vector<unsigned>> groups(1);
  std::size_t i = 0;
  while (true) {
    unsigned v = 0;
    const auto [end, ec] = std::from_chars(text.data() + i, text.data() + text.size(), v);
    const std::size_t used = static_cast<std::size_t>(end - text.data()) - i;
    if (ec != std::errc() || used == 0 || v == 0)
      throw InputError(fmt::format("expected a positive integer at character {}", i + 1));
    groups.back().push_back(v);
    i += used;
    if (i == text.size()) return groups;
    if (text[i] == ';')
      groups.emplace_back();
    else if (text[i] != ',')
      throw InputError(fmt::format("unexpected '{}' at character {}", text[i], i + 1));
    ++i;
  }
}

// Figures are vendor datasheet values: dense (not sparse) bf16 tensor-core peaks, NVLink bandwidth per GPU
// per direction, and one NIC per GPU on DGX systems.
void apply_cluster_preset(ClusterConfig& c, std::string_view preset) {
  c.preset = std::string(preset);
  if (preset == "dgx-h100" || preset == "dgx-a100") {
    const bool h100 = preset == "dgx-h100";
    c.devices_per_node = 8;
    c.device_flops = h100 ? 989e12 : 312e12;      // H100 SXM / A100 SXM dense bf16
    c.device_memory = 80e9;                       // 80 GB HBM3 / HBM2e
    c.device_mem_bw = h100 ? 3.35e12 : 2.039e12;  // bytes/s
    c.intra = "nvswitch";
    c.intra_bandwidth = h100 ? 450e9 : 300e9;  // NVLink 4 (18 links) / NVLink 3 (12 links), per direction
    c.intra_latency = 0.3e-6;                  // per link: GPU -> NVSwitch -> GPU in 0.6 us, NCCL's NVLink hop
    // What SMs moving 128 B payloads get of NVLink (NVIDIA, nccl-tests issues 149 and 212): about 230 of 300
    // GB/s on A100, about 370 of 450 on H100.
    c.intra_efficiency = h100 ? 0.82 : 0.77;
    c.nics = "per_device";
    c.link_bandwidth = (h100 ? 400e9 : 200e9) / 8;  // ConnectX-7 NDR / ConnectX-6 HDR InfiniBand
    c.link_efficiency = 0.94;                       // 46-48 GB/s per NDR NIC (NVIDIA's expected figure)
    c.link_latency = 0.5e-6;
    // DGX SuperPOD's fabric is rail-optimised and non-blocking (NIC c of every node on leaf switch c): one
    // non-blocking switch. SimGrid's fat tree routes by destination and collides the NIC stripes that rails
    // keep apart (NCCL's tree at 256 GPUs: 202 against 303 GB/s); set topology = "fat_tree" to study that.
    c.topology = "star";
    c.device_arch = h100 ? "hopper" : "ampere";
    c.nvls = h100;
    c.network_model = "CM02";  // RDMA: no TCP slow start or window factors
  } else if (preset == "eth-25g") {
    c.devices_per_node = 4;
    c.device_flops = 312e12;  // A100 PCIe dense bf16
    c.device_memory = 40e9;
    c.device_mem_bw = 1.555e12;
    c.intra = "pcie";
    c.intra_bandwidth = 32e9;  // PCIe 4.0 x16 per direction, device <-> PCIe switch
    c.pcie_bandwidth = 32e9;   // PCIe switch <-> root complex
    c.intra_latency = 1e-6;
    c.nics = "per_node";
    c.link_bandwidth = 25e9 / 8;
    c.link_latency = 5e-6;
    c.topology = "star";
  } else if (preset == "cpu-testbed") {
    // `ddplab testbed up --rate 1gbit`: one rank per namespace, each veth shaped to 1 Gbit/s.
    c.devices_per_node = 1;
    c.nics = "per_node";
    c.link_bandwidth = 1e9 / 8;
    c.topology = "star";
  } else {
    throw InputError(fmt::format("unknown cluster preset \"{}\"", preset));
  }
}

}  // namespace ddplab

namespace ddplab {

std::string describe_cluster(const ClusterConfig& c) {
  auto gbit = [](double bytes_per_s) { return fmt::format("{:g} Gbit/s", bytes_per_s * 8 / 1e9); };
  std::string out = c.preset.empty() ? "" : c.preset + ": ";
  out += c.topology;
  if (c.topology == "fat_tree")
    out += c.fat_tree.empty() ? " (sized to the world)" : fmt::format(" \"{}\"", c.fat_tree);
  if (c.topology == "dragonfly")
    out += c.dragonfly.empty() ? " (sized to the world)" : fmt::format(" \"{}\"", c.dragonfly);
  if (c.topology == "torus") out += c.torus.empty() ? " (a ring of the nodes)" : fmt::format(" \"{}\"", c.torus);
  if (c.topology == "full") out += " (a link per pair of nodes)";
  if (c.devices_per_node > 1)
    out +=
        fmt::format(", {} devices per node over {} at {:g} GB/s", c.devices_per_node, c.intra, c.intra_bandwidth / 1e9);
  else
    out += ", one device per node";
  const bool one_per_node = c.nics == "per_node" || c.devices_per_node == 1;
  out += one_per_node
             ? fmt::format(", one NIC per node of {}", gbit(c.link_bandwidth))
             : fmt::format(", {} NICs per node (one per device) of {}", c.devices_per_node, gbit(c.link_bandwidth));
  if (!c.stragglers.empty())
    out += fmt::format(", {} straggler{}", c.stragglers.size(), c.stragglers.size() > 1 ? "s" : "");
  return out;
}

}  // namespace ddplab
