#!/usr/bin/env python3
"""Differential test of `svcnet rules` against real kube-proxy (kube-oracle).

For each seed, `svcnet-testgen SEED DIR` writes a cluster history (states, the last one the
input, the others `--prior`/`--prior-aged`) and the node's settings; both programs get the same
command line; their outputs are normalised the same way (kube-proxy's test normalisation, from
conformance.py when it is found, else a built-in equivalent) and compared. The first difference
is shrunk (history steps, Services, slices, endpoints, settings dropped while it persists) and
printed with a command that reproduces it.

    scripts/difftest.py --seeds 1..1000                       # iptables, transaction and state
    scripts/difftest.py --backend nftables --seeds 1..200 --all
    scripts/difftest.py --seed 17 --keep /tmp/case17          # write the (minimised) case out
    scripts/difftest.py --record DIR --seeds 1..10            # kube-oracle's answers as conformance cases
    scripts/difftest.py --kernel --seeds 1..1000              # root: transaction on prior == state, in a real kernel

Python 3 standard library only. Paths default to the repository's release builds and the
oracle beside the repository (`../shared/tools/kube-oracle/kube-oracle`); see --help.
"""
import argparse
import concurrent.futures
import copy
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def find_conformance():
    """conformance.py's normalisation functions, or None."""
    for p in (os.environ.get('SVCNET_CONFORMANCE_PY'),
              os.path.join(ROOT, '..', 'shared', 'tools', 'conformance.py'),
              '/work/shared/tools/conformance.py'):
        if p and os.path.exists(p):
            import importlib.util
            spec = importlib.util.spec_from_file_location('svcnet_conformance', p)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            return mod
    return None


CONF = find_conformance()

# ---- built-in normalisation (used when conformance.py is not found) ------------------------
_SERVICE_ORDERED = {'KUBE-SERVICES', 'KUBE-NODEPORTS', 'KUBE-EXTERNAL-SERVICES', 'KUBE-PROXY-FIREWALL'}


def _norm_ipt_builtin(text):
    """Tables by name; chain declarations by name; rules chain by chain in order, except in
    the chains kube-proxy fills Service by Service (Go map order), which are sorted by text
    with nat KUBE-SERVICES' 'must be the last rule' jumps kept last."""
    out, table, decls, rules, deleted = [], None, [], {}, []
    tables = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith('#'):
            continue
        if line.startswith('*'):
            table, decls, rules, deleted = line[1:], [], {}, []
        elif line.startswith(':'):
            decls.append(line.split()[0][1:])
        elif line.startswith('-A '):
            rules.setdefault(line.split()[1], []).append(line)
        elif line.startswith('-X '):
            deleted.append(line[3:])
        elif line == 'COMMIT':
            tables.append((table, decls, rules, deleted))
    for table, decls, rules, deleted in sorted(tables, key=lambda t: t[0]):
        out.append('*' + table)
        out += [':' + d for d in sorted(decls)]
        for chain in sorted(rules):
            rs = rules[chain]
            if chain in _SERVICE_ORDERED:
                rs = sorted(rs, key=lambda r: ('must be the last rule' in r, r))
            out += rs
        out += ['-X ' + d for d in sorted(deleted)]
        out.append('COMMIT')
    return out


_POLICY = re.compile(r'^:(\S+) (ACCEPT|DROP) (\[\d*:\d*\])$')


def norm_ipt(text):
    # A built-in chain's policy: iptables-save prints it (':INPUT ACCEPT [0:0]'), kube-proxy's
    # fake (so kube-oracle's --print state) prints '-'; both load the same, so both compare as '-'.
    text = '\n'.join(_POLICY.sub(r':\1 - \3', l.strip()) for l in text.splitlines())
    return CONF.norm_ipt(text) if CONF else _norm_ipt_builtin(text)


def norm_nft(text):
    if CONF:
        return CONF.norm_nft(text)
    return sorted(l.strip() for l in text.splitlines() if l.strip() and not l.strip().startswith('#'))


def norm_json(text):
    try:
        return json.dumps(json.loads(text), indent=1, sort_keys=True).splitlines()
    except ValueError:
        return ['(not JSON) ' + l for l in text.splitlines()]


# IPVS: kube-proxy v1.37.2 names the IPv6 proxier's ipsets KUBE-6-... (NewProxier); kube-oracle
# runs the test fake, which passes isIPv6=false and keeps KUBE-...; svcnet follows kube-proxy.
# The IPv6 names are mapped back (NewIPSet: prefix, cut to 31 characters) before comparing.
_IPVS_SETS = ['KUBE-LOOP-BACK', 'KUBE-CLUSTER-IP', 'KUBE-EXTERNAL-IP', 'KUBE-EXTERNAL-IP-LOCAL',
              'KUBE-LOAD-BALANCER', 'KUBE-LOAD-BALANCER-FW', 'KUBE-LOAD-BALANCER-LOCAL',
              'KUBE-LOAD-BALANCER-SOURCE-IP', 'KUBE-LOAD-BALANCER-SOURCE-CIDR', 'KUBE-NODE-PORT-TCP',
              'KUBE-NODE-PORT-LOCAL-TCP', 'KUBE-NODE-PORT-UDP', 'KUBE-NODE-PORT-LOCAL-UDP',
              'KUBE-NODE-PORT-SCTP-HASH', 'KUBE-NODE-PORT-LOCAL-SCTP-HASH', 'KUBE-HEALTH-CHECK-NODE-PORT',
              'KUBE-IPVS-IPS']
_IPVS_V6_NAMES = {n.replace('KUBE-', 'KUBE-6-', 1)[:31]: n for n in _IPVS_SETS}
# kube-proxy writes one KUBE-IPVS-OUT-FILTER rule per LoadBalancer IP:port in Go map order.
_IPVS_UNORDERED = 'KUBE-IPVS-OUT-FILTER'


def norm_ipvs_json(text):
    """The IPVS JSON without the keys only one side has (kube-oracle's `syncs`, svcnet's
    `ipvsadm_restore`/`ipset_restore`), IPv6 set names mapped to the
    unprefixed ones, and the map-ordered KUBE-IPVS-OUT-FILTER rules sorted."""
    import re
    try:
        d = json.loads(text)
    except ValueError:
        return ['(not JSON) ' + l for l in text.splitlines()]
    if not isinstance(d, dict):
        return norm_json(text)
    d.pop('syncs', None)  # kube-oracle's sync timings
    d.pop('ipvsadm_restore', None)  # svcnet's restore inputs (kube-oracle has none)
    d.pop('ipset_restore', None)
    unprefix = lambda t: re.sub(r'KUBE-6-[A-Z0-9-]+', lambda m: _IPVS_V6_NAMES.get(m.group(0), m.group(0)), t)
    d = json.loads(unprefix(json.dumps(d)))

    def sort_block(t):
        lines, out, block = t.split('\n'), [], []
        for l in lines + ['']:
            if l.startswith('-A ' + _IPVS_UNORDERED + ' '):
                block.append(l)
                continue
            out += sorted(block)
            block = []
            out.append(l)
        return '\n'.join(out[:-1])
    for k in ('iptables_restore', 'iptables_state'):
        if isinstance(d.get(k), str):
            d[k] = sort_block(d[k])
    chains = d.get('iptables_chains') or {}
    if isinstance(chains.get(_IPVS_UNORDERED), list):
        chains[_IPVS_UNORDERED].sort(key=lambda r: json.dumps(r, sort_keys=True))
    return json.dumps(d, indent=1, sort_keys=True).splitlines()


# ---- running one comparison ------------------------------------------------------------------
class Case:
    """A case: settings, states (the last is the input), aged flags of the earlier ones."""

    def __init__(self, seed, args, states, aged, covers=()):
        self.seed, self.args, self.states, self.aged, self.covers = seed, list(args), states, list(aged), list(covers)

    @staticmethod
    def load(seed, d):
        meta = json.load(open(os.path.join(d, 'case.json')))
        files = [h['file'] for h in meta['history']] + [meta['input']]
        states = [json.load(open(os.path.join(d, f))) for f in files]
        return Case(seed, meta['args'], states, [h['aged'] for h in meta['history']], meta.get('covers', []))

    def write(self, d):
        os.makedirs(d, exist_ok=True)
        files = []
        for i, s in enumerate(self.states):
            f = os.path.join(d, f'state-{i}.json')
            with open(f, 'w') as fh:
                json.dump(s, fh, indent=1)
            files.append(f)
        return files

    def argv(self, backend, files, mode):
        a = ['--backend', backend] + self.args
        for f, aged in zip(files[:-1], self.aged):
            a += ['--prior-aged' if aged else '--prior', f]
        if mode == 'json':
            a += ['--output', 'json']
        else:
            a += ['--print', mode]
        return a + [files[-1]]


def run(cmd, timeout):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return -1, '', f'timed out after {timeout}s'
    except OSError as e:
        return -1, '', str(e)


def compare(opts, case, mode, tmp):
    """None when both agree; else ('oracle-failed'|'differ', text)."""
    files = case.write(tmp)
    argv = case.argv(opts.backend, files, mode)
    orc, oout, oerr = run([opts.oracle] + argv, opts.timeout)
    if orc != 0:
        return ('oracle-failed', f'kube-oracle exit {orc}: {oerr.strip()[:400]}')
    src, sout, serr = run([opts.svcnet, 'rules'] + argv, opts.timeout)
    if src != 0:
        return ('differ', f'svcnet exit {src} (kube-oracle exit 0): {serr.strip()[:400]}')
    if mode == 'json' and opts.backend == 'ipvs':
        norm = norm_ipvs_json
    elif mode == 'json':
        norm = norm_json
    elif opts.backend == 'iptables':
        norm = norm_ipt
    elif opts.backend == 'nftables':
        norm = norm_nft
    else:
        norm = lambda t: t.splitlines()  # ipvs text: compared as printed
    try:
        want, got = norm(oout), norm(sout)
    except Exception as e:  # e.g. conformance.RulesTextError: svcnet's text does not parse
        try:
            norm(oout)
        except Exception:
            return ('oracle-failed', f'oracle output does not normalise: {e}')
        return ('differ', f'svcnet output does not parse: {e}')
    if want == got:
        return None
    d = [l for l in difflib.unified_diff(want, got, 'kube-oracle', 'svcnet', lineterm='', n=1)]
    return ('differ', '\n'.join(d[:opts.diff_lines]) + (f'\n... ({len(d) - opts.diff_lines} more diff lines)' if len(d) > opts.diff_lines else ''))


def modes(opts):
    if opts.backend == 'ipvs':
        return ['json']
    return [m for m in ('transaction', 'state') if opts.print in (m, 'both')]


# ---- shrinking -------------------------------------------------------------------------------
def _items(state):
    return state.get('items', [])


def _svc_key(o):
    m = o.get('metadata', {})
    return (m.get('namespace', 'default'), m.get('name'))


def _slice_svc(o):
    m = o.get('metadata', {})
    return (m.get('namespace', 'default'), (m.get('labels') or {}).get('kubernetes.io/service-name'))


def candidates(case):
    """Smaller cases, most shrinking first."""
    n = len(case.states)
    # history: only the input; then drop one earlier state at a time
    if n > 1:
        yield Case(case.seed, case.args, case.states[-1:], [])
        for i in range(n - 1):
            yield Case(case.seed, case.args, case.states[:i] + case.states[i + 1:], case.aged[:i] + case.aged[i + 1:])
        for i, a in enumerate(case.aged):
            if a:
                aged = list(case.aged)
                aged[i] = False
                yield Case(case.seed, case.args, case.states, aged)
    # Services (with their slices), from every state
    keys = []
    for s in case.states:
        for o in _items(s):
            if o.get('kind') == 'Service' and _svc_key(o) not in keys:
                keys.append(_svc_key(o))
    for k in keys:
        yield case.replace_items(lambda o: not (o.get('kind') == 'Service' and _svc_key(o) == k)
                                 and not (o.get('kind') == 'EndpointSlice' and _slice_svc(o) == k))
    # slices, by name
    names = []
    for s in case.states:
        for o in _items(s):
            if o.get('kind') == 'EndpointSlice' and o['metadata']['name'] not in names:
                names.append(o['metadata']['name'])
    for nm in names:
        yield case.replace_items(lambda o: not (o.get('kind') == 'EndpointSlice' and o['metadata']['name'] == nm))
    # Nodes
    yield case.replace_items(lambda o: o.get('kind') != 'Node')
    # endpoints, by address
    addrs = []
    for s in case.states:
        for o in _items(s):
            if o.get('kind') == 'EndpointSlice':
                for e in o.get('endpoints') or []:
                    for a in e.get('addresses', []):
                        if a not in addrs:
                            addrs.append(a)
    for a in addrs:
        yield case.map_slices(lambda o: dict(o, endpoints=[e for e in (o.get('endpoints') or []) if a not in e.get('addresses', [])]))
    # Service fields, one at a time (in every state)
    def edit_svc(k, f):
        return case.map_items(lambda o: f(copy.deepcopy(o)) if o.get('kind') == 'Service' and _svc_key(o) == k else o)

    def without(key, reset=None):
        def f(o):
            if key == 'status':
                o.pop('status', None)
            elif reset is None:
                o['spec'].pop(key, None)
            elif key in o['spec']:
                o['spec'][key] = reset
                if key == 'sessionAffinity':
                    o['spec'].pop('sessionAffinityConfig', None)
            return o
        return f

    for k in keys:
        for key, reset in (('status', None), ('externalIPs', None), ('loadBalancerSourceRanges', None),
                           ('trafficDistribution', None), ('healthCheckNodePort', None),
                           ('sessionAffinity', 'None'), ('internalTrafficPolicy', 'Cluster'),
                           ('externalTrafficPolicy', 'Cluster')):
            c = edit_svc(k, without(key, reset))
            if c.states != case.states:
                yield c
        nports = max((len(o['spec'].get('ports') or []) for s in case.states for o in _items(s)
                      if o.get('kind') == 'Service' and _svc_key(o) == k), default=0)
        for i in range(nports if nports > 1 else 0):
            def drop_port(o, i=i):
                ps = o['spec'].get('ports') or []
                if i < len(ps):
                    del ps[i]
                return o
            yield edit_svc(k, drop_port)
    # endpoint hints and zones
    def strip_ep(field):
        return lambda o: dict(o, endpoints=[{k: v for k, v in e.items() if k != field} for e in (o.get('endpoints') or [])])
    for field in ('hints', 'zone'):
        c = case.map_slices(strip_ep(field))
        if c.states != case.states:
            yield c
    # optional settings (flag and value, or a bare flag)
    i = 0
    while i < len(case.args):
        flag = case.args[i]
        width = 1 if flag == '--masquerade-all' else 2
        if flag not in ('--node', '--node-ip'):
            yield Case(case.seed, case.args[:i] + case.args[i + width:], case.states, case.aged)
        i += width


def _replace_items(self, keep):
    states = []
    for s in self.states:
        s = dict(s)
        s['items'] = [o for o in _items(s) if keep(o)]
        states.append(s)
    return Case(self.seed, self.args, states, self.aged)


def _map_slices(self, f):
    states = []
    for s in self.states:
        s = dict(s)
        s['items'] = [f(o) if o.get('kind') == 'EndpointSlice' else o for o in _items(s)]
        states.append(s)
    return Case(self.seed, self.args, states, self.aged)


def _map_items(self, f):
    states = []
    for s in self.states:
        s = dict(s)
        s['items'] = [f(o) for o in _items(s)]
        states.append(s)
    return Case(self.seed, self.args, states, self.aged)


Case.map_items = _map_items
Case.replace_items = _replace_items
Case.map_slices = _map_slices


def size(case):
    return (len(case.states), sum(len(_items(s)) for s in case.states),
            sum(len(o.get('endpoints') or []) for s in case.states for o in _items(s)), len(case.args))


def shrink(opts, case, mode, tmp, budget):
    """The smallest case found (greedy, until no candidate keeps a difference) and its diff."""
    best, diff = case, compare(opts, case, mode, tmp)
    tries = 0
    changed = True
    seen = {json.dumps([best.args, best.aged, best.states], sort_keys=True)}
    while changed and tries < budget:
        changed = False
        for c in candidates(best):
            key = json.dumps([c.args, c.aged, c.states], sort_keys=True)
            if size(c)[:4] > size(best)[:4] or key in seen:
                continue
            seen.add(key)
            tries += 1
            r = compare(opts, c, mode, tmp)
            if r and r[0] == 'differ':
                best, diff, changed = c, r, True
                break
            if tries >= budget:
                break
    return best, diff


# ---- main ------------------------------------------------------------------------------------
def parse_seeds(s):
    if '..' in s:
        a, b = s.split('..')
        return range(int(a), int(b) + 1)
    return [int(x) for x in s.split(',')]


def check_seed(opts, seed):
    """(seed, status, mode, case, detail): status ok | differ | oracle-failed | gen-failed."""
    tmp = tempfile.mkdtemp(prefix=f'difftest-{seed}-')
    try:
        gdir = os.path.join(tmp, 'gen')
        rc, _, err = run([opts.testgen, str(seed), gdir], 60)
        if rc != 0:
            return (seed, 'gen-failed', None, None, err.strip())
        case = Case.load(seed, gdir)
        for mode in modes(opts):
            r = compare(opts, case, mode, os.path.join(tmp, 'run'))
            if r:
                return (seed, r[0], mode, case, r[1])
        return (seed, 'ok', None, case, '')
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def record(opts, seed, d):
    """Writes seed's case with kube-oracle's output as the expectation, in the conformance-case
    format (`testdata/conformance/<area>/*.json`): iptables/ipvs the transaction, nftables the
    state and the last transaction."""
    tmp = tempfile.mkdtemp(prefix=f'difftest-rec-{seed}-')
    try:
        gdir = os.path.join(tmp, 'gen')
        rc, _, err = run([opts.testgen, str(seed), gdir], 60)
        if rc != 0:
            return f'generator failed: {err.strip()}'
        case = Case.load(seed, gdir)
        files = case.write(os.path.join(tmp, 'run'))
        out = {}
        for mode in (('json',) if opts.backend == 'ipvs' else ('transaction', 'state')):
            rc, text, err = run([opts.oracle] + case.argv(opts.backend, files, mode), opts.timeout)
            if rc != 0:
                return f'kube-oracle failed: {err.strip()[:200]}'
            out[mode] = text
        if opts.backend == 'iptables':
            expect = {'format': 'iptables-restore', 'text': out['transaction']}
        elif opts.backend == 'nftables':
            expect = {'format': 'nft', 'text': out['state'], 'transaction': out['transaction']}
        else:
            expect = {'format': 'ipvs-json', 'data': json.loads(out['json'])}
        name = f'{opts.backend}-difftest-{seed}'
        doc = {
            'case': name,
            'from': f'kube-proxy v1.37.2 (kube-oracle), svcnet-testgen seed {seed} (scripts/difftest.py --record)',
            'subcommand': 'rules',
            'covers': case.covers,
            'args': ['--backend', opts.backend] + case.args,
            'prior': [dict({'input': st}, **({'then': 'age-stale-chains'} if aged else {}))
                      for st, aged in zip(case.states[:-1], case.aged)],
            'input': case.states[-1],
            'expect': expect,
        }
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, name + '.json'), 'w') as f:
            json.dump(doc, f, indent=1)
            f.write('\n')
        return None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def kernel_check(opts, seed):
    """iptables only, as root: svcnet's transaction applied with the real `iptables-restore
    --noflush` on top of svcnet's state of the previous sync (in a scratch network namespace)
    must leave the kernel exactly as loading svcnet's new state does (both read back with
    iptables-save). None when they agree, else a message."""
    tmp = tempfile.mkdtemp(prefix=f'difftest-kernel-{seed}-')
    ns = [f'difftest{os.getpid()}-{seed}-a', f'difftest{os.getpid()}-{seed}-b']
    try:
        gdir = os.path.join(tmp, 'gen')
        rc, _, err = run([opts.testgen, str(seed), gdir], 60)
        if rc != 0:
            return f'generator failed: {err.strip()}'
        case = Case.load(seed, gdir)
        # no nfacct counters exist in a scratch namespace (kube-proxy creates them first)
        if '--nfacct' in case.args:
            i = case.args.index('--nfacct')
            del case.args[i:i + 2]
        case.args += ['--nfacct', 'false']
        v6 = ':' in case.args[case.args.index('--node-ip') + 1]
        restore = 'ip6tables-restore' if v6 else 'iptables-restore'
        save = 'ip6tables-save' if v6 else 'iptables-save'
        files = case.write(os.path.join(tmp, 'run'))

        def rules(history_files, aged, mode, inp):
            c = Case(seed, case.args, [None] * (len(history_files) + 1), aged)
            rc, out, err = run([opts.svcnet, 'rules'] + c.argv(opts.backend, history_files + [inp], mode), opts.timeout)
            if rc != 0:
                raise RuntimeError(f'svcnet exit {rc}: {err.strip()[:300]}')
            return out

        def sh(args, stdin=None):
            p = subprocess.run(args, input=stdin, capture_output=True, text=True, timeout=60)
            if p.returncode != 0:
                raise RuntimeError(f'{" ".join(args[:5])}: {p.stderr.strip()[:300]}')
            return p.stdout

        for n in ns:
            sh(['ip', 'netns', 'add', n])
        try:
            want = rules(files[:-1], case.aged, 'state', files[-1])
            if len(files) > 1:
                before = rules(files[:-2], case.aged[:-1], 'state', files[-2])
                sh(['ip', 'netns', 'exec', ns[0], restore], before)
                tx = rules(files[:-1], case.aged, 'transaction', files[-1])
                sh(['ip', 'netns', 'exec', ns[0], restore, '--noflush'], tx)
            else:
                sh(['ip', 'netns', 'exec', ns[0], restore], want)
            sh(['ip', 'netns', 'exec', ns[1], restore], want)
            got = sh(['ip', 'netns', 'exec', ns[0], save])
            ref = sh(['ip', 'netns', 'exec', ns[1], save])
        except RuntimeError as e:
            return str(e)
        norm = CONF.norm_iptables_save if CONF else (lambda t: sorted(l for l in t.splitlines() if l[:1] in '-:'))
        g, w = norm(got), norm(ref)
        if g != w:
            a = json.dumps(w, indent=0, sort_keys=True).splitlines()
            b = json.dumps(g, indent=0, sort_keys=True).splitlines()
            d = [l for l in difflib.unified_diff(a, b, 'state loaded', 'transaction on prior', lineterm='', n=0)]
            return 'kernel tables differ:\n' + '\n'.join(d[:20])
        return None
    finally:
        for n in ns:
            subprocess.run(['ip', 'netns', 'del', n], capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)


def reproduce_cmd(opts, case, mode, d):
    files = [os.path.join(d, f'state-{i}.json') for i in range(len(case.states))]
    a = ' '.join(_q(x) for x in case.argv(opts.backend, files, mode))
    return f'{opts.svcnet} rules {a}\n{opts.oracle} {a}'


def _q(s):
    return s if all(c.isalnum() or c in '-_./:=,' for c in s) else "'" + s.replace("'", "'\\''") + "'"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--backend', default='iptables', choices=['iptables', 'nftables', 'ipvs'])
    ap.add_argument('--seeds', default='1..100', help='A..B (inclusive) or a comma list')
    ap.add_argument('--seed', type=int, help='one seed')
    ap.add_argument('--print', default='both', choices=['both', 'transaction', 'state'])
    ap.add_argument('--svcnet', default=os.path.join(ROOT, 'target', 'release', 'svcnet'))
    ap.add_argument('--oracle', default=os.environ.get('KUBE_ORACLE', os.path.join(ROOT, '..', 'shared', 'tools', 'kube-oracle', 'kube-oracle')))
    ap.add_argument('--testgen', default=os.path.join(ROOT, 'target', 'release', 'svcnet-testgen'))
    ap.add_argument('--jobs', type=int, default=2)
    ap.add_argument('--all', action='store_true', help='go on after the first difference (one line per seed)')
    ap.add_argument('--no-shrink', action='store_true')
    ap.add_argument('--shrink-budget', type=int, default=400, help='most comparisons spent shrinking')
    ap.add_argument('--keep', help='write the (minimised) first difference into this directory')
    ap.add_argument('--record', metavar='DIR', help="write each seed's case with kube-oracle's output as a conformance case into DIR (no comparison)")
    ap.add_argument('--kernel', action='store_true', help="iptables, as root: no oracle; check in network namespaces that svcnet's transaction on its prior state leaves the kernel as its new state does")
    ap.add_argument('--timeout', type=float, default=120)
    ap.add_argument('--diff-lines', type=int, default=40)
    opts = ap.parse_args()
    for what in ('testgen',) + (() if opts.kernel else ('oracle',)) + (() if opts.record else ('svcnet',)):
        if not os.path.exists(getattr(opts, what)):
            sys.exit(f'difftest: {what} not found at {getattr(opts, what)} (build it, or pass --{what})')
    seeds = [opts.seed] if opts.seed is not None else list(parse_seeds(opts.seeds))
    if opts.kernel:
        bad = 0
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, opts.jobs)) as pool:
            for seed, why in zip(seeds, pool.map(lambda s: kernel_check(opts, s), seeds)):
                if why:
                    bad += 1
                    print(f'seed {seed}: {why}')
        print(f'kernel: {len(seeds)} seeds {seeds[0]}..{seeds[-1]}: {len(seeds) - bad} agree, {bad} differ')
        return 1 if bad else 0
    if opts.record:
        bad = 0
        for seed in seeds:
            why = record(opts, seed, opts.record)
            if why:
                bad += 1
                print(f'seed {seed}: not recorded: {why}', file=sys.stderr)
        print(f'recorded {len(seeds) - bad} of {len(seeds)} seeds into {opts.record}')
        return 1 if bad else 0
    if not CONF:
        print('note: conformance.py not found; using the built-in normalisation', file=sys.stderr)
    counts = {'ok': 0, 'differ': 0, 'oracle-failed': 0, 'gen-failed': 0}
    differing, first = [], None
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, opts.jobs)) as pool:
        for seed, status, mode, case, detail in pool.map(lambda s: check_seed(opts, s), seeds):
            counts[status] += 1
            if status == 'ok':
                continue
            if status != 'differ':
                print(f'seed {seed}: {status}: {detail.splitlines()[0] if detail else ""}', file=sys.stderr)
                continue
            differing.append(seed)
            head = detail.splitlines()
            if opts.all:
                print(f'seed {seed}: differs ({mode}): {" | ".join(l for l in head if l[:1] in "+-" and l[:3] not in ("+++", "---"))[:240]}')
            if first is None:
                first = (seed, mode, case, detail)
                if not opts.all:
                    pool.shutdown(wait=False, cancel_futures=True)
                    break
    print(f'\n{opts.backend}: {len(seeds)} seeds {seeds[0]}..{seeds[-1]} ({opts.print}): '
          f'{counts["ok"]} agree, {counts["differ"]} differ, {counts["oracle-failed"]} oracle failed, '
          f'{counts["gen-failed"]} generator failed'
          + (' (stopped at the first difference; --all to go on)' if first and not opts.all else ''))
    if differing and opts.all:
        print('differing seeds: ' + ','.join(map(str, differing)))
    if not first:
        return 0
    seed, mode, case, detail = first
    tmp = tempfile.mkdtemp(prefix=f'difftest-shrink-{seed}-')
    try:
        if not opts.no_shrink:
            before = size(case)
            case, r = shrink(opts, case, mode, tmp, opts.shrink_budget)
            detail = r[1] if r else detail
            print(f'\nseed {seed} ({mode}), shrunk from {before[0]} states/{before[1]} objects/{before[2]} endpoints '
                  f'to {size(case)[0]}/{size(case)[1]}/{size(case)[2]}:')
        keep = opts.keep or tmp
        case.write(keep)
        print(detail)
        print(f'\nsettings: {" ".join(case.args)}')
        print(f'covers: {"; ".join(case.covers)}' if case.covers else '', end='')
        if opts.keep:
            print(f'\ncase written to {keep}; reproduce with:\n{reproduce_cmd(opts, case, mode, keep)}')
        else:
            print('\nminimal input (last state):')
            print(json.dumps(case.states[-1], indent=1)[:6000])
            for i, s in enumerate(case.states[:-1]):
                print(f'prior state {i}{" (aged)" if case.aged[i] else ""}: {json.dumps(s)[:3000]}')
    finally:
        if not opts.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    return 1


if __name__ == '__main__':
    sys.exit(main())
