// This machine's host name (gethostname), for the names a node gives
// itself: a worker's default name, a control-plane replica's holder name,
// the URL other replicas reach it at.
#pragma once

#include <string>

namespace qf::io {

/// The host name; empty when the system gives none.
std::string host_name();

/// The host name as the resolver spells it in full (its canonical name:
/// /etc/hosts' first name for it, or DNS's), which other machines are
/// likelier to resolve: a Kubernetes pod with a subdomain gets
/// <pod>.<subdomain>.<namespace>.svc.<zone> there, where its bare name
/// resolves for nobody else. The bare name when the lookup fails.
std::string canonical_host_name();

} // namespace qf::io
