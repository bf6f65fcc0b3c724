#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Shows floodgate holding a flood back: a veth pair into a network namespace, one source
# flooding and one sending below its limit, and what passed and what was dropped per source;
# then a flood from 256 sources at millions of packets per second, made in the kernel by
# `floodgate flood`.
set -euo pipefail
FLOODGATE_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$FLOODGATE_ROOT/scripts/lib/deps.sh"

if [[ $(id -u) -ne 0 ]]; then
  echo "error: the demo creates network namespaces and attaches XDP: run it as root" >&2
  exit 1
fi

RATE=${RATE:-1000}
BURST=${BURST:-100}
SECONDS_TO_SEND=${DEMO_SECONDS:-5}

install_missing_packages
ensure_bpffs
BUILD_DIR=${FLOODGATE_BUILD_DIR:-$FLOODGATE_ROOT/build}
echo "==> building"
build_floodgate "$BUILD_DIR" RelWithDebInfo floodgate floodgate-udp-traffic >/dev/null
FLOODGATE=$BUILD_DIR/userspace/cli/floodgate
TRAFFIC=$BUILD_DIR/userspace/udp_traffic/floodgate-udp-traffic

SENDER=fgdemo-sender
TARGET=fgdemo-target
IFACE=fgdemo0
TARGET_IP=198.18.0.1
FLOODER=198.18.0.2
STEADY=198.18.0.3
# floodgate runs in the target namespace: nsenter switches only the network namespace, so
# the CLI still sees the host's /sys/fs/bpf where the limiter's pins live
in_target() { nsenter --net=/run/netns/$TARGET "$@"; }
in_sender() { nsenter --net=/run/netns/$SENDER "$@"; }

cleanup() {
  in_target "$FLOODGATE" detach $IFACE >/dev/null 2>&1 || true
  ip netns del $SENDER 2>/dev/null || true
  ip netns del $TARGET 2>/dev/null || true
}
trap cleanup EXIT
cleanup

echo "==> a veth pair from namespace $SENDER ($FLOODER, $STEADY) to $TARGET ($TARGET_IP)"
ip netns add $SENDER
ip netns add $TARGET
ip link add fgdemo-s numtxqueues 2 numrxqueues 2 netns $SENDER type veth \
  peer name $IFACE numtxqueues 2 numrxqueues 2 netns $TARGET
for ns in $SENDER $TARGET; do
  ip netns exec $ns sysctl -qw net.ipv6.conf.all.disable_ipv6=1
  ip -n $ns link set lo up
done
ip -n $SENDER addr add $FLOODER/24 dev fgdemo-s
ip -n $SENDER addr add $STEADY/24 dev fgdemo-s
ip -n $TARGET addr add $TARGET_IP/24 dev $IFACE
ip -n $SENDER link set fgdemo-s up
ip -n $TARGET link set $IFACE up

echo "==> floodgate attach $IFACE --rate $RATE --burst $BURST"
in_target "$FLOODGATE" attach $IFACE --rate "$RATE" --burst "$BURST"
in_target "$FLOODGATE" status $IFACE

echo "==> for ${SECONDS_TO_SEND}s: $FLOODER floods from every CPU, $STEADY sends 200 packets/s"
"$TRAFFIC" --sender-netns /run/netns/$SENDER --receiver-netns /run/netns/$TARGET \
  --to $TARGET_IP --flood $FLOODER --steady $STEADY --steady-pps 200 --seconds "$SECONDS_TO_SEND"
echo "    the flooder may pass $BURST + $RATE/s x ${SECONDS_TO_SEND}s = $((BURST + RATE * SECONDS_TO_SEND)); the steady source is under its limit"

echo "==> floodgate stats $IFACE"
in_target "$FLOODGATE" stats $IFACE

FLOOD_SECONDS=${DEMO_FLOOD_SECONDS:-3}
echo "==> floodgate flood: ${FLOOD_SECONDS}s of UDP from 256 sources, built and sent by the kernel (XDP_TX)"
in_sender "$FLOODGATE" flood fgdemo-s --dst $TARGET_IP --sources 256 --duration "${FLOOD_SECONDS}s"
echo "    each source may pass $BURST + $RATE/s; what the flood sends per source beyond that is dropped"

echo "==> floodgate stats $IFACE"
in_target "$FLOODGATE" stats $IFACE
