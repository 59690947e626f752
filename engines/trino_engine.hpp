// Trino clusters (`engine: trino`): QueryFlux is their client. A statement
// is POSTed to /v1/statement and its nextUri followed here, so the client
// keeps polling QueryFlux, and every poll of a query reaches the cluster
// that runs it. The client's X-Trino-* headers are passed on; cancel is a
// DELETE of the nextUri; the health check is GET /v1/info.
#pragma once

#include "engines/engine.hpp"

namespace qf::engines {

std::shared_ptr<database> open_trino(const config::cluster& cfg);

} // namespace qf::engines
