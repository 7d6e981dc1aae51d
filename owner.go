package agentrt

// OwnerGone reports whether owner, a runner's Owner ("host:pid:…"), is a
// process of this host that has exited: what it held — a session's
// lease, or a lease-like claim of an adapter's own making — can be taken
// over at once rather than when it expires. An owner of another host is
// never known to be gone.
func OwnerGone(owner string) bool { return ownerDead(owner) }
