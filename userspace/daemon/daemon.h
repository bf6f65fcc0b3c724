// SPDX-License-Identifier: MIT
// runDaemon: `floodgate run` — attach what the config lists, serve metrics, reload on SIGHUP
// or a changed file, and on SIGTERM/SIGINT detach (or leave enforcing).
#pragma once

#include <string>

#include "daemon/listen_address.h"
#include "floodgate/common/result.h"

namespace floodgate::daemon {

struct RunOptions {
  std::string config_path;
  ListenAddress listen;
  bool keep_attached = false;  // on exit, leave the limiters attached and enforcing
};

// Blocks until SIGTERM or SIGINT. Fails at start (a metrics address it cannot bind, found
// before anything is attached; an invalid config; an attach failure) with one line; a listed
// interface that does not exist is not a failure: it is reported unhealthy and attached when
// it appears. Later reload failures are logged and counted, never fatal.
// Blocks SIGHUP, SIGTERM and SIGINT in the calling thread (and threads it starts).
Status runDaemon(const RunOptions& options);

}  // namespace floodgate::daemon
