#!/usr/bin/env python3
"""Trace differential test: svcnet's rules and real kube-proxy's rules (kube-oracle), traced alike.

For each seed, `svcnet-testgen SEED DIR` writes a cluster history and the node's settings (as
for scripts/difftest.py). A set of packets is derived from the last state: to every Service
frontend (ClusterIPs, NodePorts on every host address and loopback, externalIPs, LoadBalancer
ingress IPs, health-check node ports) for every port/protocol, plus probes to a wrong port, the
wrong protocol, an unallocated address next to each ClusterIP, an unrelated address and the
node on an unused port; each from a pod, from the node itself, from outside, from an endpoint
of the Service (hairpin) and from the LB IP (cloud SNAT). Then, with one process per side:

    svcnet trace --backend B ARGS [--prior ...] --packets FLOWS --output json INPUT
    kube-oracle rules --backend B ARGS [--prior ...] --print state INPUT > ORACLE
    svcnet trace --backend B ARGS --rules ORACLE --packets FLOWS --output json

and compares every flow's answer (DNAT endpoint set, REJECT/DROP/ACCEPT or pass, masquerade).
`--backend ipvs` compares svcnet's IPVS trace (virtual server lookup) with the same lookup in
kube-oracle's `--output json` virtual servers (rule text of IPVS mode is not read by --rules).
The first disagreement is printed with the commands that reproduce it.

    scripts/tracediff.py --backend iptables --seeds 1..200
    scripts/tracediff.py --backend nftables --seeds 1..200 --all
    scripts/tracediff.py --seed 17 --keep /tmp/t17
    scripts/tracediff.py --cases ../shared/conformance/trace   # kube-oracle's rules against the cases' flows

Python 3 standard library only; shares difftest.py's case loading and paths.
"""
import argparse
import concurrent.futures
import ipaddress
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import difftest  # noqa: E402  (Case, run, parse_seeds)

ROOT = difftest.ROOT


def _items(state):
    return state.get('items', []) if isinstance(state, dict) and 'items' in state else list(state or [])


def _arg(args, flag):
    try:
        return args[args.index(flag) + 1]
    except (ValueError, IndexError):
        return None


def host_addresses(args, node_ip):
    """The node's addresses from --host-addresses (family of the node IP), node IP first."""
    fam = ipaddress.ip_address(node_ip).version
    out = [node_ip]
    spec = _arg(args, '--host-addresses') or ''
    for iface in spec.split(';'):
        _, _, addrs = iface.partition('=')
        for a in addrs.split(','):
            a = a.strip().split('/')[0]
            if a and ipaddress.ip_address(a).version == fam and a not in out:
                out.append(a)
    return out


def flows(case, max_flows):
    """The packets of a case: (name, source, destination, port, protocol)."""
    args = case.args
    node_ip = _arg(args, '--node-ip')
    fam = ipaddress.ip_address(node_ip).version
    hosts = host_addresses(args, node_ip)
    cidrs = [c for c in (_arg(args, '--cluster-cidr') or '').split(',') if c]
    cidrs = [ipaddress.ip_network(c, strict=False) for c in cidrs]
    cidrs = [c for c in cidrs if c.version == fam]
    pod = str(cidrs[0].network_address + 7) if cidrs else ('10.244.9.7' if fam == 4 else 'fd00:10:244:9::7')
    outside = '203.0.113.7' if fam == 4 else '2001:db8:ffff::7'
    loopback = '127.0.0.1' if fam == 4 else '::1'
    base_sources = [('pod', pod), ('node', node_ip), ('outside', outside)]

    def of_family(ip):
        try:
            return ipaddress.ip_address(ip).version == fam
        except ValueError:
            return False

    items = _items(case.states[-1])
    slices = {}
    for o in items:
        if o.get('kind') == 'EndpointSlice':
            svc = o.get('metadata', {}).get('labels', {}).get('kubernetes.io/service-name')
            ns = o.get('metadata', {}).get('namespace', '')
            for e in o.get('endpoints') or []:
                for a in e.get('addresses') or []:
                    if of_family(a):
                        slices.setdefault((ns, svc), []).append(a)
    out, used_ips = [], set()
    for o in items:
        if o.get('kind') != 'Service':
            continue
        md, spec = o.get('metadata', {}), o.get('spec', {})
        key = f"{md.get('namespace', '')}/{md.get('name', '')}"
        cips = [ip for ip in (spec.get('clusterIPs') or [spec.get('clusterIP')]) if ip and of_family(ip)]
        used_ips.update(cips)
        eips = [ip for ip in spec.get('externalIPs') or [] if of_family(ip)]
        lbs = [i.get('ip') for i in ((o.get('status') or {}).get('loadBalancer') or {}).get('ingress') or []
               if i.get('ip') and of_family(i.get('ip'))]
        sources = list(base_sources)
        eps = slices.get((md.get('namespace', ''), md.get('name')), [])
        if eps:
            sources.append(('endpoint', eps[0]))
        if lbs:
            sources.append(('lb-ip', lbs[0]))
        ports = spec.get('ports') or []
        taken = {(p.get('protocol', 'TCP'), p.get('port')) for p in ports}
        for p in ports:
            proto, port = p.get('protocol', 'TCP'), p.get('port')
            if not isinstance(port, int):
                continue
            dests = [('cluster-ip', ip, port) for ip in cips]
            dests += [('external-ip', ip, port) for ip in eips]
            dests += [('lb-ip', ip, port) for ip in lbs]
            np_ = p.get('nodePort')
            if isinstance(np_, int):
                dests += [('node-port', h, np_) for h in hosts]
                dests += [('node-port-loopback', loopback, np_)]
            for what, ip, prt in dests:
                for sname, src in sources:
                    out.append((f'{key}:{port}/{proto} {what} {ip}:{prt} from {sname}', src, ip, prt, proto))
                # Probes next to the frontend: another port, another protocol (from outside and a pod).
                wrong = prt + 1
                while (proto, wrong) in taken:
                    wrong += 1
                other = 'UDP' if proto == 'TCP' else 'TCP'
                for sname, src in base_sources[::2]:
                    out.append((f'{key} {what} {ip}:{wrong}/{proto} (wrong port) from {sname}', src, ip, wrong, proto))
                    if (other, prt) not in taken:
                        out.append((f'{key} {what} {ip}:{prt}/{other} (wrong protocol) from {sname}', src, ip, prt, other))
        h = spec.get('healthCheckNodePort')
        if isinstance(h, int):
            for sname, src in base_sources:
                out.append((f'{key} health-check {node_ip}:{h} from {sname}', src, node_ip, h, 'TCP'))
        for ip in cips:
            nxt = str(ipaddress.ip_address(ip) + 1)
            if nxt not in used_ips:
                out.append((f'{key} unallocated {nxt} next to its ClusterIP from pod', pod, nxt, 80, 'TCP'))
    unrelated = '198.51.100.9' if fam == 4 else '2001:db8:eeee::9'
    for sname, src in base_sources:
        out.append((f'unrelated {unrelated}:80 from {sname}', src, unrelated, 80, 'TCP'))
        out.append((f'node {node_ip}:1 from {sname}', src, node_ip, 1, 'TCP'))
    # Probes to a ClusterIP "next to" another may hit a later Service's ClusterIP: harmless.
    seen, uniq = set(), []
    for f in out:
        k = f[1:]
        if k not in seen:
            seen.add(k)
            uniq.append(f)
    return uniq[:max_flows]


def trace_argv(opts, case, files, flows_file):
    a = ['trace', '--backend', opts.backend] + case.args
    for f, aged in zip(files[:-1], case.aged):
        a += ['--prior-aged' if aged else '--prior', f]
    return a + ['--packets', flows_file, '--output', 'json', files[-1]]


def answers(rc, out, err, what):
    try:
        return json.loads(out)['flows'], None
    except (ValueError, KeyError, TypeError):
        return None, f'{what}: exit {rc}: {err.strip()[:400]}'


def describe(a):
    if a.get('error'):
        return 'error: ' + a['error']
    o = a.get('output')
    s = ('pass' if o == [] else 'dnat ' + ','.join(o)) if isinstance(o, list) else str(o)
    return s + (' masq' if a.get('masq') else '')


def ipvs_answers(oracle_json, fl):
    """The IPVS tracer's answers computed from kube-oracle's virtual servers: the real servers
    of weight > 0 of the virtual server (address, port, protocol), REJECT when it has none,
    pass when there is no such virtual server."""
    vss = {}
    for vs in json.loads(oracle_json).get('virtual_servers') or []:
        addr = str(ipaddress.ip_address(vs['address']))
        vss[(addr, vs['port'], vs['protocol'].upper())] = vs
    out = []
    for name, _src, dst, port, proto in fl:
        vs = vss.get((str(ipaddress.ip_address(dst)), port, proto.upper()))
        if vs is None:
            o = []
        else:
            eps = sorted({(f"[{r['address']}]" if ':' in r['address'] else r['address']) + f":{r['port']}"
                          for r in vs.get('real_servers') or [] if r.get('weight', 0) > 0})
            o = eps if eps else 'REJECT'
        out.append({'name': name, 'output': o, 'masq': False})
    return out


def check_seed(opts, seed):
    """(seed, status, detail, outcomes): status ok | differ | error | oracle-failed | gen-failed;
    outcomes counts svcnet's answers by kind."""
    tmp = tempfile.mkdtemp(prefix=f'tracediff-{seed}-')
    try:
        gdir = os.path.join(tmp, 'gen')
        rc, _, err = difftest.run([opts.testgen, str(seed), gdir], 60)
        if rc != 0:
            return (seed, 'gen-failed', err.strip(), {})
        case = difftest.Case.load(seed, gdir)
        files = case.write(os.path.join(tmp, 'run'))
        fl = flows(case, opts.max_flows)
        flows_file = os.path.join(tmp, 'flows.json')
        with open(flows_file, 'w') as fh:
            json.dump([{'name': n, 'source': s, 'destination': d, 'port': p, 'protocol': pr}
                       for n, s, d, p, pr in fl], fh)
        kinds = {}
        if opts.text == 'transaction' and case.states[:-1]:
            return (seed, 'skipped', 'has prior states: its last transaction is not the whole rule set', {})
        oargv = case.argv(opts.backend, files, 'json' if opts.backend == 'ipvs' else opts.text)
        orc, oout, oerr = difftest.run([opts.oracle] + oargv, opts.timeout)
        if orc != 0:
            return (seed, 'oracle-failed', f'kube-oracle exit {orc}: {oerr.strip()[:300]}', kinds)
        ofile = os.path.join(tmp, 'oracle.txt')
        with open(ofile, 'w') as fh:
            fh.write(oout)
        argv = trace_argv(opts, case, files, flows_file)
        mine, problem = answers(*difftest.run([opts.svcnet] + argv, opts.timeout), 'svcnet trace (own rules)')
        if problem:
            return (seed, 'error', problem, kinds)
        base = ['trace', '--backend', opts.backend] + case.args
        if opts.backend == 'ipvs':
            try:
                theirs = ipvs_answers(oout, fl)
            except (ValueError, KeyError, TypeError) as e:
                return (seed, 'oracle-failed', f'kube-oracle IPVS JSON: {e}', kinds)
        else:
            theirs, problem = answers(*difftest.run(
                [opts.svcnet] + base + ['--rules', ofile, '--packets', flows_file, '--output', 'json'], opts.timeout),
                'svcnet trace --rules (kube-oracle rules)')
            if problem:
                return (seed, 'error', problem, kinds)
        for a in mine:
            k = describe(a).split(' ')[0].rstrip(':')
            kinds[k] = kinds.get(k, 0) + 1
            if a.get('masq'):
                kinds['masq'] = kinds.get('masq', 0) + 1
        diffs = []
        for a, b in zip(mine, theirs):
            if (a.get('output'), a.get('masq'), a.get('error')) != (b.get('output'), b.get('masq'), b.get('error')):
                diffs.append(f"{a['name']}: svcnet {describe(a)} | kube-proxy {describe(b)}")
        errors = [f"{a['name']}: {a['error']}" for a in mine + theirs if a.get('error')]
        if diffs or len(mine) != len(theirs):
            if opts.keep:
                shutil.copytree(tmp, os.path.join(opts.keep, f'seed-{seed}'), dirs_exist_ok=True)
            detail = '\n'.join(diffs[:opts.diff_lines])
            if len(diffs) > opts.diff_lines:
                detail += f'\n... ({len(diffs) - opts.diff_lines} more)'
            detail += f'\nsettings: {" ".join(case.args)}\ncovers: {"; ".join(case.covers)}'
            return (seed, 'differ', detail, kinds)
        if errors:
            return (seed, 'error', '\n'.join(errors[:5]), kinds)
        return (seed, 'ok', '', kinds)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def check_cases(opts):
    """Traces each trace conformance case's flows through kube-oracle's rules for its input
    (`--rules`), and compares with the case's expectations as the conformance runner does."""
    names = sorted(n for n in os.listdir(opts.cases) if n.endswith('.json'))
    bad = 0
    for n in names:
        case = json.load(open(os.path.join(opts.cases, n)))
        tmp = tempfile.mkdtemp(prefix='tracediff-case-')
        try:
            inp = os.path.join(tmp, 'input.json')
            with open(inp, 'w') as fh:
                json.dump(case['input'], fh)
            fl = case['expect']['flows']
            ff = os.path.join(tmp, 'flows.json')
            with open(ff, 'w') as fh:
                json.dump([{k: f[k] for k in ('name', 'source', 'destination', 'port', 'protocol')} for f in fl], fh)
            args = [a for a in case['args']]
            orc, oout, oerr = difftest.run([opts.oracle, 'rules'] + args + ['--print', 'state', inp], opts.timeout)
            if orc != 0:
                bad += 1
                print(f'{n}: kube-oracle exit {orc}: {oerr.strip()[:200]}')
                continue
            of = os.path.join(tmp, 'oracle.txt')
            with open(of, 'w') as fh:
                fh.write(oout)
            got, problem = answers(*difftest.run([opts.svcnet, 'trace'] + args + ['--rules', of, '--packets', ff, '--output', 'json'], opts.timeout), 'trace --rules')
            if problem:
                bad += 1
                print(f'{n}: {problem}')
                continue
            wrong = []
            for w, g in zip(fl, got):
                want = sorted(w['output']) if isinstance(w['output'], list) else w['output']
                if g.get('output') != want or (isinstance(want, list) and g.get('masq') != w.get('masq')):
                    wrong.append(f"{w['name']}: got {describe(g)}, want {want}{' masq' if w.get('masq') else ''}")
            if wrong:
                bad += 1
                print(f'{n}: ' + '; '.join(wrong[:5]))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f'cases: {len(names) - bad} of {len(names)} pass through kube-oracle\'s rules (trace --rules)')
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--backend', default='iptables', choices=['iptables', 'nftables', 'ipvs'])
    ap.add_argument('--seeds', default='1..100', help='A..B (inclusive) or a comma list')
    ap.add_argument('--seed', type=int, help='one seed')
    ap.add_argument('--svcnet', default=os.path.join(ROOT, 'target', 'release', 'svcnet'))
    ap.add_argument('--oracle', default=os.environ.get('KUBE_ORACLE', os.path.join(ROOT, '..', 'shared', 'tools', 'kube-oracle', 'kube-oracle')))
    ap.add_argument('--testgen', default=os.path.join(ROOT, 'target', 'release', 'svcnet-testgen'))
    ap.add_argument('--jobs', type=int, default=2)
    ap.add_argument('--all', action='store_true', help='go on after the first disagreement (one block per seed)')
    ap.add_argument('--keep', help='copy the files of disagreeing seeds into this directory')
    ap.add_argument('--max-flows', type=int, default=5000, help='most packets per seed')
    ap.add_argument('--timeout', type=float, default=300)
    ap.add_argument('--diff-lines', type=int, default=10)
    ap.add_argument('--text', default='state', choices=['state', 'transaction'],
                    help="kube-oracle's text traced: --print state (default), or the transaction of a first sync "
                         "(iptables: the restore payload, to which trace --rules adds kube-proxy's jump rules); "
                         "seeds with prior states are skipped")
    ap.add_argument('--cases', metavar='DIR', help="instead: trace conformance cases' flows through kube-oracle's rules")
    opts = ap.parse_args()
    if opts.cases:
        return check_cases(opts)
    for what in ('testgen', 'oracle', 'svcnet'):
        if not os.path.exists(getattr(opts, what)):
            sys.exit(f'tracediff: {what} not found at {getattr(opts, what)} (build it, or pass --{what})')
    seeds = [opts.seed] if opts.seed is not None else list(difftest.parse_seeds(opts.seeds))
    counts = {'ok': 0, 'differ': 0, 'error': 0, 'oracle-failed': 0, 'gen-failed': 0, 'skipped': 0}
    total, first, bad = {}, None, []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, opts.jobs)) as pool:
        for seed, status, detail, kinds in pool.map(lambda s: check_seed(opts, s), seeds):
            counts[status] += 1
            for k, v in kinds.items():
                total[k] = total.get(k, 0) + v
            if status in ('ok', 'skipped'):
                continue
            bad.append(seed)
            if opts.all or first is None:
                print(f'seed {seed}: {status}:\n  ' + detail.replace('\n', '\n  '))
            if first is None:
                first = seed
                if not opts.all:
                    pool.shutdown(wait=False, cancel_futures=True)
                    break
    nflows = sum(v for k, v in total.items() if k != 'masq')
    print(f'\n{opts.backend}: {len(seeds)} seeds {seeds[0]}..{seeds[-1]}, {nflows} flows '
          f'({", ".join(f"{k} {v}" for k, v in sorted(total.items()))}): '
          f'{counts["ok"]} agree, {counts["differ"]} differ, {counts["error"]} trace errors, '
          f'{counts["oracle-failed"]} oracle failed, {counts["gen-failed"]} generator failed'
          + (f', {counts["skipped"]} skipped (prior states)' if counts['skipped'] else '')
          + (' (stopped at the first; --all to go on)' if first is not None and not opts.all else ''))
    if bad:
        print('seeds: ' + ','.join(map(str, bad)))
        print(f'reproduce: {sys.argv[0]} --backend {opts.backend} --seed {bad[0]} --keep /tmp/tracediff-{bad[0]}'
              f' --svcnet {opts.svcnet} --testgen {opts.testgen}')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
