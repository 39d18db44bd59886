//! NetworkPolicies without a cluster: default and validate them as the API server would, then
//! ask which pods may talk to which, and on what ports.
//!
//! Run with `cargo run -p svcnet-examples --example network_policy`.

use serde_json::json;
use svcnet_model::reachability::{self, Cluster, Namespace, Peer, Protocol};
use svcnet_model::{NetworkPolicy, Pod, defaults, validation};

fn pod(ns: &str, name: &str, app: &str, ip: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": ns, "labels": {"app": app}},
        "spec": {"containers": [{"name": "main", "ports": [{"name": "http", "containerPort": 8080}]}]},
        "status": {"podIP": ip}
    }))
    .unwrap_or_default()
}

fn main() {
    // Three policies for the `shop` namespace: deny everything in, let the frontend reach the
    // api on its named port, and let monitoring scrape anything. The last one has a mistake.
    let manifests = [
        json!({
            "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": "default-deny", "namespace": "shop"},
            "spec": {"podSelector": {}}
        }),
        json!({
            "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": "api-from-web", "namespace": "shop"},
            "spec": {
                "podSelector": {"matchLabels": {"app": "api"}},
                "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "web"}}}],
                             "ports": [{"port": "http"}]}]
            }
        }),
        json!({
            "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": "monitoring", "namespace": "shop"},
            "spec": {
                "podSelector": {},
                "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"team": "ops"}},
                                       "ipBlock": {"cidr": "10.2.0.0/16"}}]}]
            }
        }),
    ];

    let mut policies = Vec::new();
    for m in manifests {
        let mut np: NetworkPolicy = match serde_json::from_value(m) {
            Ok(np) => np,
            Err(e) => {
                eprintln!("cannot read policy: {e}");
                continue;
            }
        };
        defaults::default_network_policy(&mut np);
        let errors = validation::validate_network_policy_create(&np);
        if errors.is_empty() {
            println!("{}: valid", np.metadata.key());
            policies.push(np);
        } else {
            for e in &errors {
                println!("{}: {e}", np.metadata.key());
            }
        }
    }

    let pods = [
        pod("shop", "web", "web", "10.1.0.1"),
        pod("shop", "api", "api", "10.1.0.2"),
        pod("shop", "db", "db", "10.1.0.3"),
        pod("ops", "prometheus", "prometheus", "10.2.0.1"),
    ];
    let namespaces = [Namespace {
        name: "ops".into(),
        labels: [("team".to_string(), "ops".to_string())].into(),
    }];
    let cluster = Cluster {
        policies: &policies,
        namespaces: &namespaces,
        pods: &pods,
    };

    println!();
    println!("who may connect to shop/api:");
    let api = reachability::pod_reachability(&cluster, &pods[1]);
    for peer in &api.ingress.pods {
        let ports: Vec<String> = peer
            .ports
            .ranges
            .iter()
            .map(|r| format!("{}/{}-{}", r.protocol, r.first, r.last))
            .collect();
        println!("  {}/{}: {}", peer.namespace, peer.name, ports.join(", "));
    }

    println!();
    println!("TCP 8080 matrix (row connects to column):");
    print!("{:>12}", "");
    for to in &pods {
        print!("{:>12}", to.metadata.name());
    }
    println!();
    for from in &pods {
        print!("{:>12}", from.metadata.name());
        for to in &pods {
            let v = reachability::check(&cluster, &Peer::Pod(from), &Peer::Pod(to), Protocol::Tcp, 8080);
            print!("{:>12}", if v.allowed { "yes" } else { "-" });
        }
        println!();
    }
}
