#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Checks the CMake target graph: no cycle, and no target uses one from a layer above its own.
#
# The layers are declared here and only here (LAYERS, bottom first; docs/architecture.md
# draws them). A target may link or depend on targets of its own layer and of the layers
# below it. Every target the project defines needs a layer: one in LAYERS by name, or, for
# targets defined under tests/, the tests layer by DIRECTORY_LAYERS.
#
# Usage: target_layers.py --cmake CMAKE --build BUILD_DIR
#   Runs `cmake --graphviz` on the configured BUILD_DIR (which re-runs its configure step,
#   as a build does after a CMakeLists.txt changes) into a temporary directory, and reads
#   the project's own targets from BUILD_DIR/floodgate_targets.txt, which configuring
#   writes (cmake/target_layers.cmake). Prints one line per problem and exits 1, or one
#   summary line and exits 0. ctest runs it as the unit test target_layers.
#   --dot FILE --targets FILE check a graph already written, without running cmake.
import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

TABLE = "LAYERS in cmake/target_layers.py"

# Bottom first. The library (floodgate::ratelimit, ::redis, ::httplib) sits directly above
# the helpers it is built from, and below everything of the packet side: an installed
# libfloodgate must never need libbpf, the kernel wrappers or the controller.
LAYERS = [
    ("base", [  # results, CIDRs, units, text; YAML reading with positioned diagnostics
        "floodgate_common_objects", "floodgate_common",
        "floodgate_yaml_objects", "floodgate_yaml"]),
    ("protocols", [  # the offender report line and EscalateConfig: library and daemon share it
        "floodgate_report_objects", "floodgate_report"]),
    ("library-core", [  # floodgate::ratelimit: userspace/http/core and stores
        "floodgate_http_core", "floodgate_http_stores",
        "floodgate_ratelimit", "floodgate_ratelimit_shared"]),
    ("library-addons", [  # floodgate::redis (http/redis, http/fleet), floodgate::httplib
        "floodgate_http_redis", "floodgate_http_fleet",
        "floodgate_redis", "floodgate_redis_shared",
        "floodgate_http_adapters", "floodgate_httplib", "floodgate_httplib_shared"]),
    ("bpf", [  # the built XDP objects, their skeletons and bpf/include's shared header
        "floodgate_bpf", "floodgate_flood_bpf"]),
    ("kernel", ["floodgate_kernel"]),  # RAII over libbpf: fds, pins, programs, locks
    ("controller", ["floodgate_controller"]),  # the limiter's maps, rules, bans, status views
    ("config", ["floodgate_config"]),  # floodgate.yaml as a whole → AttachOptions, rules
    ("metrics", ["floodgate_metrics"]),  # Prometheus exposition of the counters
    ("daemon", ["floodgate_daemon"]),  # `floodgate run`
    ("tools", [  # the CLI's tools: `floodgate lab`, `flood`, `learn`, the UDP traffic tool
        "floodgate_lab", "floodgate_flood", "floodgate_learn", "floodgate_udp_traffic"]),
    ("programs", [  # what is run: the CLI, the example service, the traffic tool
        "floodgate", "floodgate-http-example", "floodgate-udp-traffic"]),
    ("tests", []),  # tests, their support libraries and the benchmark tools
]

# Targets defined in these folders (relative to the source tree) and not named in LAYERS
# take this layer, so that a new test needs no entry here.
DIRECTORY_LAYERS = [("tests", "tests")]


def run_graphviz(cmake, build, out_dir):
    """Writes the build tree's target graph to out_dir; returns the .dot file's path."""
    dot = Path(out_dir) / "targets.dot"
    proc = subprocess.run([cmake, f"--graphviz={dot}", str(build)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0 or not dot.exists():
        tail = proc.stdout.strip().splitlines()[-5:]
        sys.exit(f"target layers: `cmake --graphviz` failed on {build}: " + " | ".join(tail))
    return dot


def read_graph(dot):
    """Returns the edges of a CMake graphviz file as (from name, to name) pairs."""
    labels = {}
    edges = []
    node_re = re.compile(r'^\s*"(node\d+)"\s*\[\s*label\s*=\s*"([^"]*)"')
    edge_re = re.compile(r'^\s*"(node\d+)"\s*->\s*"(node\d+)"')
    for line in Path(dot).read_text().splitlines():
        if m := node_re.match(line):
            labels[m.group(1)] = m.group(2)
        elif m := edge_re.match(line):
            edges.append((m.group(1), m.group(2)))
    return [(labels[a], labels[b]) for a, b in edges]


def read_targets(path):
    """Returns {target: folder it is defined in}, from floodgate_targets.txt."""
    targets = {}
    for line in Path(path).read_text().splitlines():
        if line.strip():
            name, folder = line.split("\t")
            targets[name] = folder
    return targets


def assign_layers(targets, problems):
    """Returns {target: layer rank}; adds a problem for every target without a layer."""
    rank_of_layer = {name: rank for rank, (name, _) in enumerate(LAYERS)}
    declared = {}
    for rank, (layer, names) in enumerate(LAYERS):
        for name in names:
            if name in declared:
                problems.append(f"{name} is declared twice in {TABLE}")
            declared[name] = rank
            if name not in targets:
                problems.append(f"{TABLE} names {name}, which this build does not define: "
                                "remove it or correct its name")
    ranks = {}
    for name, folder in sorted(targets.items()):
        if name in declared:
            ranks[name] = declared[name]
            continue
        for prefix, layer in DIRECTORY_LAYERS:
            if folder == prefix or folder.startswith(prefix + "/"):
                ranks[name] = rank_of_layer[layer]
                break
        else:
            problems.append(f"{name} (defined in {folder}/CMakeLists.txt) has no layer: "
                            f"add it to {TABLE}")
    return ranks


def find_cycles(nodes, edges):
    """Returns one cycle (a list of targets, first repeated last) per strongly connected
    component of more than one target."""
    succ = {n: sorted({b for a, b in edges if a == n}) for n in nodes}
    index, low, on_stack, stack, components = {}, {}, set(), [], []

    def strongconnect(root):  # Tarjan's algorithm, iterative: no recursion limit to meet
        work = [(root, 0)]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, i = work[-1]
            if i < len(succ[node]):
                work[-1] = (node, i + 1)
                nxt = succ[node][i]
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(set(component))

    for n in sorted(nodes):
        if n not in index:
            strongconnect(n)

    cycles = []
    for component in components:  # the shortest way round from the component's first target
        start = min(component)
        previous = {start: None}
        queue = [start]
        while queue:
            node = queue.pop(0)
            for nxt in succ[node]:
                if nxt == start:
                    path = [node]
                    while previous[path[-1]] is not None:
                        path.append(previous[path[-1]])
                    cycles.append(list(reversed(path)) + [start])
                    queue = []
                    break
                if nxt in component and nxt not in previous:
                    previous[nxt] = node
                    queue.append(nxt)
    return sorted(cycles)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cmake", default="cmake")
    parser.add_argument("--build", help="a configured build tree")
    parser.add_argument("--dot", help="a graph from `cmake --graphviz` (instead of --build)")
    parser.add_argument("--targets", help="the build tree's floodgate_targets.txt")
    args = parser.parse_args()
    if not args.build and not (args.dot and args.targets):
        parser.error("give --build, or --dot and --targets")

    with tempfile.TemporaryDirectory(prefix="floodgate-layers-") as scratch:
        dot = args.dot or run_graphviz(args.cmake, args.build, scratch)
        edges = read_graph(dot)
        targets = read_targets(args.targets or Path(args.build) / "floodgate_targets.txt")

    problems = []
    ranks = assign_layers(targets, problems)
    layer_name = [name for name, _ in LAYERS]
    # Only edges between the project's own targets count. A target drawn as depending on
    # itself is not a cycle: CMake draws that for a post-build step that names the target's
    # own file, as gtest_discover_tests's does.
    own = sorted({(a, b) for a, b in edges if a in targets and b in targets and a != b})
    for a, b in own:
        if a in ranks and b in ranks and ranks[b] > ranks[a]:
            problems.append(f"upward link: {a} (layer {layer_name[ranks[a]]}) uses {b} "
                            f"(layer {layer_name[ranks[b]]}, above it)")
    for cycle in find_cycles(set(targets), own):
        problems.append("cycle: " + " -> ".join(cycle))

    for problem in problems:
        print(problem)
    if problems:
        return 1
    print(f"target layers: {len(targets)} targets in {len(LAYERS)} layers, {len(own)} links "
          "between them, no cycle, none upward")
    return 0


if __name__ == "__main__":
    sys.exit(main())
