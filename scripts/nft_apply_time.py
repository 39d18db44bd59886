#!/usr/bin/env python3
"""Times the real kernel applying svcnet's nftables output, as issue "svcnet-rules, part 2" asks.

Builds kube-oracle's benchmark cluster (N ClusterIP Services x E ready endpoints over 50 nodes,
172.30.0.0/16 ClusterIPs, port p80/TCP, endpoints from 10.128.0.0/10) and the same cluster with
endpoint 0 of Service 0 replaced; runs `svcnet rules --backend nftables` for the full sync and
for the one-endpoint partial sync (`--prior`), then loads both with the real `nft -f` inside a
fresh network namespace, ROUNDS times, and prints the wall-clock times. Needs root, iproute2 and
nftables.

    python3 scripts/nft_apply_time.py --svcnet target/release/svcnet [--services 10000]
        [--endpoints 10] [--rounds 3]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def cluster(services, endpoints, changed):
    items = []
    for i in range(services):
        ns, name = f"ns-{i % 100}", f"svc-{i}"
        items.append({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"namespace": ns, "name": name},
            "spec": {"type": "ClusterIP",
                     "clusterIP": f"172.30.{(i >> 8) & 255}.{i & 255}",
                     "ports": [{"name": "p80", "port": 80, "protocol": "TCP"}]},
        })
        eps = []
        for j in range(endpoints):
            n = i * endpoints + j
            if changed and i == 0 and j == 0:
                n = services * endpoints + 1
            eps.append({"addresses": [f"10.{128 + ((n >> 16) & 63)}.{(n >> 8) & 255}.{n & 255}"],
                        "conditions": {"ready": True}, "nodeName": f"node-{n % 50}"})
        items.append({
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"namespace": ns, "name": f"{name}-1",
                         "labels": {"kubernetes.io/service-name": name}},
            "addressType": "IPv4", "endpoints": eps,
            "ports": [{"name": "p80", "port": 80, "protocol": "TCP"}],
        })
    return {"apiVersion": "v1", "kind": "List", "items": items}


def timed(cmd):
    start = time.perf_counter()
    subprocess.run(cmd, check=True)
    return time.perf_counter() - start


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--svcnet", default="target/release/svcnet")
    ap.add_argument("--services", type=int, default=10000)
    ap.add_argument("--endpoints", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root (network namespaces)")
    ns = f"svcnet-apply-{os.getpid()}"
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for label, changed in (("old", False), ("new", True)):
            paths[label] = os.path.join(tmp, f"{label}.json")
            with open(paths[label], "w") as f:
                json.dump(cluster(args.services, args.endpoints, changed), f)
        rules = [args.svcnet, "rules", "--backend", "nftables", "--node", "node-0",
                 "--node-ip", "100.101.102.103", "--print", "transaction"]
        full, partial = os.path.join(tmp, "full.nft"), os.path.join(tmp, "partial.nft")
        with open(full, "w") as f:
            subprocess.run(rules + [paths["old"]], stdout=f, check=True)
        with open(partial, "w") as f:
            subprocess.run(rules + ["--prior", paths["old"], paths["new"]], stdout=f, check=True)
        for p in (full, partial):
            with open(p) as f:
                text = f.read()
            print(f"{os.path.basename(p)}: {text.count(chr(10))} lines, {len(text)} bytes")
        subprocess.run(["ip", "netns", "add", ns], check=True)
        try:
            exec_ns = ["ip", "netns", "exec", ns]
            empty = min(timed(exec_ns + ["true"]) for _ in range(5))
            print(f"ip netns exec overhead: {empty * 1e3:.1f} ms (included below)")
            for r in range(1, args.rounds + 1):
                subprocess.run(exec_ns + ["nft", "flush", "ruleset"], check=True)
                t_full = timed(exec_ns + ["nft", "-f", full])
                t_partial = timed(exec_ns + ["nft", "-f", partial])
                print(f"round {r}: full sync {t_full * 1e3:.0f} ms, "
                      f"one-endpoint transaction {t_partial * 1e3:.1f} ms")
        finally:
            subprocess.run(["ip", "netns", "del", ns], check=False)


if __name__ == "__main__":
    main()
