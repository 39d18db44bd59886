//! NetworkPolicy reachability: which peers may reach a pod on which ports (to be filled in).
