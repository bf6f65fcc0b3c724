# SPDX-License-Identifier: MIT
# The Debian packages floodgate needs to build, test and demo; sourced by the scripts.

FLOODGATE_PACKAGES=(
  # build
  cmake make g++ pkg-config clang llvm
  libbpf-dev bpftool libelf-dev zlib1g-dev
  libcli11-dev libyaml-cpp-dev nlohmann-json3-dev libhiredis-dev libcpp-httplib-dev libssl-dev
  # tests and benchmarks
  googletest libgtest-dev libgmock-dev libbenchmark-dev
  iproute2 nftables iptables redis-server redis-tools prometheus
  ethtool  # generic mode's merging features, turned on and off as its warning says
  systemd  # systemd-analyze verifies the unit file
  dpkg-dev groff-base man-db  # the .deb's dependencies (dpkg-shlibdeps); checking the man page
)

# What scripts/bench.sh needs on top: plots, JSON on the command line, pgrep for the
# receiver's NAPI threads, and an HTTP load generator (ethtool, for veth GRO and counters,
# is a test package).
FLOODGATE_BENCH_PACKAGES=(gnuplot-nox jq procps wrk)

# Installs whatever of FLOODGATE_PACKAGES, and of the packages named as arguments, is
# missing (needs root).
install_missing_packages() {
  local missing=()
  local pkg
  for pkg in "${FLOODGATE_PACKAGES[@]}" "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" \
      || missing+=("$pkg")
  done
  if ((${#missing[@]} == 0)); then
    return 0
  fi
  if [[ $(id -u) -ne 0 ]]; then
    echo "error: missing packages: ${missing[*]}; run as root or install them with apt-get" >&2
    return 1
  fi
  echo "==> installing: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# floodgate pins its limiters in the BPF filesystem at /sys/fs/bpf, which systemd mounts at
# boot. Where none is mounted, floodgate mounts it only when it can tell that it runs in the
# host's mount namespace (else the mount, and the limiter with it, would vanish with a
# private namespace); a machine whose PID 1 hides its namespace from root does not let it
# tell. The scripts mount it themselves: every floodgate they start runs in their namespace.
ensure_bpffs() {
  [[ $(stat -f -c %T /sys/fs/bpf 2>/dev/null) == bpf_fs ]] && return 0
  if [[ $(id -u) -ne 0 ]]; then
    echo "note: no BPF filesystem at /sys/fs/bpf; as root this script mounts one" >&2
    return 0
  fi
  echo "==> mounting the BPF filesystem at /sys/fs/bpf"
  mkdir -p /sys/fs/bpf
  mount -t bpf bpf /sys/fs/bpf
}

# The redis tests start their own redis-server processes (one server, and a cluster made
# with redis-cli) on free loopback ports; they need the binaries, never a running service.
# A redis-server service that apt started on 6379 is left alone: the tests do not use it.
check_redis_binaries() {
  if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
    echo "error: redis-server and redis-cli are needed by the redis tests (apt-get install redis-server redis-tools)" >&2
    return 1
  fi
}

# Configures and builds into $1 with build type $2; further arguments name the targets to
# build (all of them when none is given). Extra cmake options come from FLOODGATE_CMAKE_ARGS.
build_floodgate() {
  local build_dir=$1 build_type=$2
  shift 2
  local targets=()
  if (($# > 0)); then
    targets=(--target "$@")
  fi
  # shellcheck disable=SC2086
  cmake -S "$FLOODGATE_ROOT" -B "$build_dir" -DCMAKE_BUILD_TYPE="$build_type" \
    ${FLOODGATE_CMAKE_ARGS:-} >/dev/null
  cmake --build "$build_dir" -j "$(nproc)" "${targets[@]}"
}
