#!/bin/sh
# libfloodgate as a service outside this tree uses it: the runtime and dev components
# installed into a temp prefix, then tests/consumer/ (copied out of the tree) built against
# that prefix alone, once with find_package(floodgate CONFIG COMPONENTS ratelimit httplib)
# and once with pkg-config. Each build must serve one request and answer the next 429 with
# the RateLimit fields, from the installed shared libraries; floodgate::ratelimit must need
# neither hiredis nor OpenSSL. Then everything the dev component installed is removed and
# both builds must still run on the runtime component alone, as on a host with libfloodgate0
# and without libfloodgate-dev.
# usage: consumer_test.sh BUILD_DIR SOURCE_DIR   (FG_LIBDIR: the library dir, as configured)
set -eu
build=$1 source=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
fail() { echo "FAIL: $*" >&2; exit 1; }

libdir=$prefix/$FG_LIBDIR
echo "==> cmake --install --component runtime --prefix $prefix"
cmake --install "$build" --prefix "$prefix" --component runtime >"$tmp/install.log" 2>&1 \
  || { cat "$tmp/install.log"; fail "cmake --install of the runtime component failed"; }
# the shared objects and nothing else: no header, no .so link, no static library
(cd "$prefix" && find . ! -type d | sort) >"$tmp/runtime.files"
for component in ratelimit redis httplib; do
  grep -qx "./$FG_LIBDIR/libfloodgate_$component.so.0" "$tmp/runtime.files" \
    || fail "the runtime component has no libfloodgate_$component.so.0"
done
if grep -v -E "/libfloodgate_(ratelimit|redis|httplib)\.so\.0(\.[0-9]+)*\$" "$tmp/runtime.files"; then
  fail "the runtime component installs more than the shared objects (above)"
fi
echo "==> cmake --install --component dev --prefix $prefix"
cmake --install "$build" --prefix "$prefix" --component dev >"$tmp/install.log" 2>&1 \
  || { cat "$tmp/install.log"; fail "cmake --install of the dev component failed"; }
for component in ratelimit redis httplib; do
  [ -f "$libdir/libfloodgate_$component.a" ] || fail "no static libfloodgate_$component.a"
  soname=$(objdump -p "$libdir/libfloodgate_$component.so" | awk '/SONAME/ {print $2}')
  [ "$soname" = "libfloodgate_$component.so.0" ] || fail "libfloodgate_$component.so has SONAME '$soname'"
done
if ldd "$libdir/libfloodgate_ratelimit.so" | grep -E 'hiredis|libcrypto|libssl'; then
  fail "floodgate::ratelimit links the Redis client or OpenSSL"
fi
cp -r "$source/tests/consumer" "$tmp/consumer"

check_consumer() {  # BINARY HOW
  "$1" || fail "the consumer built with $2 did not get 200 then 429 with RateLimit fields"
  ldd "$1" | grep -q "$libdir/libfloodgate_ratelimit.so.0" \
    || { ldd "$1"; fail "the consumer built with $2 does not run on the installed library"; }
}
no_tree_paths() {  # FILE HOW: the build reached nothing of floodgate's tree
  if grep -n -e "$source/include" -e "$source/userspace" -e "$build" "$1"; then
    fail "the build with $2 used floodgate's source or build tree"
  fi
}

echo "==> find_package(floodgate CONFIG REQUIRED COMPONENTS ratelimit httplib)"
cmake -S "$tmp/consumer" -B "$tmp/with-cmake" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
  >"$tmp/cmake.log" 2>&1 || { cat "$tmp/cmake.log"; fail "configuring the consumer"; }
cmake --build "$tmp/with-cmake" >"$tmp/build.log" 2>&1 \
  || { cat "$tmp/build.log"; fail "building the consumer with find_package"; }
no_tree_paths "$tmp/with-cmake/compile_commands.json" find_package
check_consumer "$tmp/with-cmake/consumer" find_package

echo "==> pkg-config floodgate-ratelimit floodgate-httplib"
flags=$(PKG_CONFIG_PATH=$libdir/pkgconfig pkg-config --cflags --libs floodgate-ratelimit floodgate-httplib) \
  || fail "pkg-config does not find floodgate-ratelimit and floodgate-httplib"
echo "$flags" >"$tmp/pkg-config.flags"
no_tree_paths "$tmp/pkg-config.flags" pkg-config
# shellcheck disable=SC2086  # the flags are words
g++ -std=c++20 -o "$tmp/consumer-pkg-config" "$tmp/consumer/main.cpp" $flags -Wl,-rpath,"$libdir" \
  || fail "building the consumer with pkg-config's flags"
check_consumer "$tmp/consumer-pkg-config" pkg-config

echo "==> the runtime component alone"
(cd "$prefix" && find . ! -type d | sort) >"$tmp/all.files"
comm -23 "$tmp/all.files" "$tmp/runtime.files" | (cd "$prefix" && xargs rm -f)
[ ! -e "$libdir/libfloodgate_ratelimit.so" ] || fail "the dev component's .so link is still there"
check_consumer "$tmp/with-cmake/consumer" "find_package, on the runtime component alone,"
check_consumer "$tmp/consumer-pkg-config" "pkg-config, on the runtime component alone,"
echo "OK"
