//! A small Kubernetes node built from network namespaces, for tests that load rule sets into a
//! real kernel (`iptables-restore`, `nft -f`) and check them with real connections.
//!
//! Topology (IPv4 only; every address lives inside namespaces this harness creates):
//!
//! ```text
//!   client ns (CLIENT_IP) --eth0==eth0-- node ns (NODE_IP/24, ip_forward on)
//!                                          |-- pN --eth0-- pod ns "NAME" (POD_IP/32)
//! ```
//!
//! Pods hang off the node on their own veth pairs with routed /32 addresses and no bridge (so
//! pod -> Service -> pod traffic needs no br_netfilter): the node routes `POD_IP/32 dev pN`,
//! and each pod's default route goes to `169.254.1.1`, a link-scoped address on every node-side
//! veth. Each pod runs one small Python server that answers on its TCP and UDP ports with
//! `NAME SOURCE-IP`. Probes run `python3` inside a namespace through `ip netns exec` (the
//! workspace forbids `unsafe`, so no `setns` from Rust) and classify each attempt as an
//! answer, a refusal (RST or ICMP unreachable), or a timeout.
//!
//! Everything is removed by `Drop` (servers killed, namespaces deleted, which deletes their
//! veths); names carry the process id and a counter, so parallel runs do not collide.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The node's address on its uplink.
pub const NODE_IP: &str = "192.168.0.2";
/// The external client's address on the node's uplink.
pub const CLIENT_IP: &str = "192.168.0.100";
/// The link-scoped gateway address every pod routes through (on each node-side veth).
const POD_GATEWAY: &str = "169.254.1.1";

/// How long a probe waits for one answer before it calls the attempt a timeout.
pub const PROBE_TIMEOUT_SECS: f64 = 1.0;

const SERVER_PY: &str = r#"
import selectors, socket, sys
name = sys.argv[1]
sel = selectors.DefaultSelector()
for p in filter(None, sys.argv[2].split(',')):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(('0.0.0.0', int(p))); s.listen(128); sel.register(s, selectors.EVENT_READ, 't')
for p in filter(None, sys.argv[3].split(',')):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(('0.0.0.0', int(p))); sel.register(s, selectors.EVENT_READ, 'u')
sel.register(sys.stdin, selectors.EVENT_READ, 'stdin')
print('ready', flush=True)
while True:
    for key, _ in sel.select():
        s = key.fileobj
        if key.data == 'stdin':
            if not sys.stdin.readline():
                sys.exit(0)
        elif key.data == 't':
            try:
                c, a = s.accept()
                c.sendall(('%s %s\n' % (name, a[0])).encode()); c.close()
            except OSError:
                pass
        else:
            try:
                d, a = s.recvfrom(2048)
                s.sendto(('%s %s\n' % (name, a[0])).encode(), a)
            except OSError:
                pass
"#;

const PROBE_PY: &str = r#"
import errno, socket, sys
proto, host, port, count, timeout = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
for _ in range(count):
    s = None
    try:
        if proto == 'tcp':
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        else:
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.settimeout(timeout)
        s.connect((host, port))
        if proto == 'udp':
            s.send(b'probe')
        d = s.recv(200).decode().strip()
        print('answer ' + d if d else 'closed', flush=True)
    except ConnectionRefusedError:
        print('refused', flush=True)
    except socket.timeout:
        print('timeout', flush=True)
    except OSError as e:
        print('error ' + (errno.errorcode.get(e.errno) or str(e.errno)), flush=True)
    finally:
        if s is not None:
            s.close()
"#;

/// What one probe attempt gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// An answer from the pod `name`, which saw the connection come from `source`.
    Answer {
        /// The answering pod.
        name: String,
        /// The source address the pod saw.
        source: String,
    },
    /// The connection was refused (TCP RST or ICMP unreachable).
    Refused,
    /// Nothing came back within the probe timeout.
    Timeout,
    /// Anything else (connection closed without data, another socket error).
    Other(String),
}

impl Probe {
    /// The answering pod, if any.
    pub fn name(&self) -> Option<&str> {
        match self {
            Probe::Answer { name, .. } => Some(name),
            _ => None,
        }
    }
}

/// Why the kernel tests cannot run here, or `None` when they can: root, `ip`, `python3`, the
/// given tools, and a network namespace that can be created.
pub fn skip_reason(tools: &[&str]) -> Option<String> {
    let uid = Command::new("id").arg("-u").output().ok()?;
    if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
        return Some("not running as root (network namespaces need CAP_SYS_ADMIN)".into());
    }
    for tool in ["ip", "python3"].iter().chain(tools) {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            return Some(format!("`{tool}` is not installed"));
        }
    }
    let name = unique_name("probe");
    let made = Command::new("ip").args(["netns", "add", &name]).output();
    let _ = Command::new("ip").args(["netns", "del", &name]).output();
    match made {
        Ok(o) if o.status.success() => None,
        Ok(o) => Some(format!(
            "cannot create a network namespace: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(e) => Some(format!("cannot run `ip netns add`: {e}")),
    }
}

fn unique_name(tag: &str) -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    format!(
        "svk{}-{}-{tag}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

fn run(args: &[&str], stdin: Option<&str>) -> Result<Output, String> {
    let mut cmd = Command::new(args[0]);
    cmd.args(&args[1..])
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| format!("{}: {e}", args.join(" ")))?;
    if let Some(text) = stdin {
        let mut pipe = child.stdin.take().ok_or("no stdin")?;
        pipe.write_all(text.as_bytes())
            .map_err(|e| format!("{}: writing stdin: {e}", args.join(" ")))?;
    }
    child
        .wait_with_output()
        .map_err(|e| format!("{}: {e}", args.join(" ")))
}

/// Runs a command and fails with its standard error when it exits non-zero.
fn must(args: &[&str]) -> Result<String, String> {
    let out = run(args, None)?;
    if !out.status.success() {
        return Err(format!(
            "`{}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// One pod of the node: its namespace, address and the node-side veth.
#[derive(Debug, Clone)]
pub struct Pod {
    /// The name the pod answers with.
    pub name: String,
    /// The pod's IPv4 address (routed as a /32).
    pub ip: String,
    /// The pod's network namespace.
    pub ns: String,
    /// The node-side veth name.
    pub veth: String,
}

/// A node in network namespaces; removed on drop.
pub struct Node {
    /// The node's network namespace (where the rules are loaded).
    pub ns: String,
    /// The external client's namespace (on the node's uplink).
    pub client_ns: String,
    /// The pods, in creation order.
    pub pods: Vec<Pod>,
    namespaces: Vec<String>,
    servers: Vec<Child>,
}

impl Node {
    /// Creates the node and client namespaces and the uplink between them.
    pub fn new() -> Result<Node, String> {
        let mut node = Node {
            ns: unique_name("node"),
            client_ns: unique_name("client"),
            pods: Vec::new(),
            namespaces: Vec::new(),
            servers: Vec::new(),
        };
        for ns in [node.ns.clone(), node.client_ns.clone()] {
            must(&["ip", "netns", "add", &ns])?;
            node.namespaces.push(ns.clone());
            must(&["ip", "-n", &ns, "link", "set", "lo", "up"])?;
        }
        let (n, c) = (node.ns.clone(), node.client_ns.clone());
        for sysctl in [
            "net.ipv4.ip_forward=1",
            "net.ipv4.conf.all.rp_filter=0",
            "net.ipv4.conf.default.rp_filter=0",
        ] {
            must(&["ip", "netns", "exec", &n, "sysctl", "-qw", sysctl])?;
        }
        must(&[
            "ip", "-n", &n, "link", "add", "eth0", "type", "veth", "peer", "name", "eth0", "netns", &c,
        ])?;
        must(&[
            "ip",
            "-n",
            &n,
            "addr",
            "add",
            &format!("{NODE_IP}/24"),
            "dev",
            "eth0",
        ])?;
        must(&["ip", "-n", &n, "link", "set", "eth0", "up"])?;
        must(&[
            "ip",
            "-n",
            &c,
            "addr",
            "add",
            &format!("{CLIENT_IP}/24"),
            "dev",
            "eth0",
        ])?;
        must(&["ip", "-n", &c, "link", "set", "eth0", "up"])?;
        must(&["ip", "-n", &c, "route", "add", "default", "via", NODE_IP])?;
        // Like a real node, a default route (to the client's namespace, which routes nowhere):
        // without one, traffic to a ClusterIP with no DNAT fails routing (ENETUNREACH) before
        // the filter rules can REJECT it, and the node's own connections fail before OUTPUT.
        must(&["ip", "-n", &n, "route", "add", "default", "via", CLIENT_IP])?;
        Ok(node)
    }

    /// Adds a pod `name` at `ip` (IPv4, routed as a /32 from the node) running a server that
    /// answers on `tcp` and `udp` ports with `NAME SOURCE-IP`. Returns once the server listens.
    pub fn add_pod(&mut self, name: &str, ip: &str, tcp: &[u16], udp: &[u16]) -> Result<(), String> {
        let ns = unique_name(&format!("pod{}", self.pods.len()));
        let veth = format!("p{}", self.pods.len());
        must(&["ip", "netns", "add", &ns])?;
        self.namespaces.push(ns.clone());
        let n = self.ns.clone();
        must(&["ip", "-n", &ns, "link", "set", "lo", "up"])?;
        must(&[
            "ip", "-n", &n, "link", "add", &veth, "type", "veth", "peer", "name", "eth0", "netns", &ns,
        ])?;
        must(&[
            "ip",
            "-n",
            &n,
            "addr",
            "add",
            &format!("{POD_GATEWAY}/32"),
            "dev",
            &veth,
            "scope",
            "link",
        ])?;
        must(&["ip", "-n", &n, "link", "set", &veth, "up"])?;
        must(&["ip", "-n", &ns, "addr", "add", &format!("{ip}/32"), "dev", "eth0"])?;
        must(&["ip", "-n", &ns, "link", "set", "eth0", "up"])?;
        must(&[
            "ip",
            "-n",
            &ns,
            "route",
            "add",
            POD_GATEWAY,
            "dev",
            "eth0",
            "scope",
            "link",
        ])?;
        must(&[
            "ip",
            "-n",
            &ns,
            "route",
            "add",
            "default",
            "via",
            POD_GATEWAY,
            "dev",
            "eth0",
        ])?;
        must(&[
            "ip",
            "-n",
            &n,
            "route",
            "add",
            &format!("{ip}/32"),
            "dev",
            &veth,
            "src",
            NODE_IP,
        ])?;
        let join = |ports: &[u16]| ports.iter().map(u16::to_string).collect::<Vec<_>>().join(",");
        let mut child = Command::new("ip")
            .args(["netns", "exec", &ns, "python3", "-c", SERVER_PY, name])
            .arg(join(tcp))
            .arg(join(udp))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("starting the server of pod {name}: {e}"))?;
        let mut line = String::new();
        let read = child
            .stdout
            .take()
            .map(|out| BufReader::new(out).read_line(&mut line));
        self.servers.push(child);
        if !matches!(read, Some(Ok(_))) || line.trim() != "ready" {
            return Err(format!("the server of pod {name} did not start: {line:?}"));
        }
        self.pods.push(Pod {
            name: name.to_owned(),
            ip: ip.to_owned(),
            ns,
            veth,
        });
        Ok(())
    }

    /// The namespace of pod `name`.
    pub fn pod_ns(&self, name: &str) -> Result<&str, String> {
        self.pods
            .iter()
            .find(|p| p.name == name)
            .map(|p| p.ns.as_str())
            .ok_or_else(|| format!("no pod {name}"))
    }

    /// Runs `args` inside the node's namespace with `stdin`; fails with standard error unless
    /// the command exits 0.
    pub fn exec(&self, args: &[&str], stdin: Option<&str>) -> Result<String, String> {
        let mut full = vec!["ip", "netns", "exec", self.ns.as_str()];
        full.extend_from_slice(args);
        let out = run(&full, stdin)?;
        if !out.status.success() {
            return Err(format!(
                "`{}` in the node failed (exit {:?}): {}",
                args.join(" "),
                out.status.code(),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Loads `text` with `iptables-restore` in the node (`--noflush` for a transaction on top
    /// of what is loaded; without it the tables in `text` are replaced).
    pub fn iptables_restore(&self, text: &str, noflush: bool) -> Result<(), String> {
        let mut args = vec!["iptables-restore", "-w", "5"];
        if noflush {
            args.push("--noflush");
        }
        self.exec(&args, Some(text)).map(drop)
    }

    /// Loads `text` with `nft -f -` in the node.
    pub fn nft(&self, text: &str) -> Result<(), String> {
        self.exec(&["nft", "-f", "-"], Some(text)).map(drop)
    }

    /// What the node's kernel holds, for failure messages: `iptables-save` and `nft list
    /// ruleset` as far as they run.
    pub fn dump(&self) -> String {
        let mut s = String::new();
        for args in [&["iptables-save"][..], &["nft", "list", "ruleset"][..]] {
            match self.exec(args, None) {
                Ok(t) => s += &t,
                Err(e) => s += &format!("({e})\n"),
            }
        }
        s
    }

    /// `count` fresh connections (TCP) or datagram exchanges (UDP, each from a new socket) from
    /// namespace `from` to `addr:port`, one after the other.
    pub fn probe_from(
        &self,
        from: &str,
        proto: &str,
        addr: &str,
        port: u16,
        count: usize,
    ) -> Result<Vec<Probe>, String> {
        let mut child = Command::new("ip")
            .args(["netns", "exec", from, "python3", "-c", PROBE_PY, proto, addr])
            .arg(port.to_string())
            .arg(count.to_string())
            .arg(PROBE_TIMEOUT_SECS.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("starting a probe: {e}"))?;
        // A bound on the whole probe, so a wedged run cannot hang the suite.
        let limit = Duration::from_secs_f64(count as f64 * (PROBE_TIMEOUT_SECS + 0.5) + 10.0);
        let start = Instant::now();
        loop {
            match child.try_wait() {
                Ok(Some(_)) => break,
                Ok(None) if start.elapsed() > limit => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(format!("probe {proto} {addr}:{port} did not finish"));
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(10)),
                Err(e) => return Err(format!("waiting for a probe: {e}")),
            }
        }
        let out = child
            .wait_with_output()
            .map_err(|e| format!("probe output: {e}"))?;
        let text = String::from_utf8_lossy(&out.stdout);
        let got: Vec<Probe> = text
            .lines()
            .map(|l| match l.split_once(' ') {
                Some(("answer", rest)) => {
                    let (name, source) = rest.split_once(' ').unwrap_or((rest, ""));
                    Probe::Answer {
                        name: name.to_owned(),
                        source: source.to_owned(),
                    }
                }
                _ if l == "refused" => Probe::Refused,
                _ if l == "timeout" => Probe::Timeout,
                _ => Probe::Other(l.to_owned()),
            })
            .collect();
        if got.len() != count {
            return Err(format!(
                "probe {proto} {addr}:{port} gave {} of {count} results: {}",
                got.len(),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(got)
    }

    /// Probes from the external client (on the node's uplink).
    pub fn probe_client(
        &self,
        proto: &str,
        addr: &str,
        port: u16,
        count: usize,
    ) -> Result<Vec<Probe>, String> {
        self.probe_from(&self.client_ns, proto, addr, port, count)
    }

    /// Probes from pod `pod`.
    pub fn probe_pod(
        &self,
        pod: &str,
        proto: &str,
        addr: &str,
        port: u16,
        count: usize,
    ) -> Result<Vec<Probe>, String> {
        self.probe_from(self.pod_ns(pod)?, proto, addr, port, count)
    }

    /// Probes from the node itself.
    pub fn probe_node(&self, proto: &str, addr: &str, port: u16, count: usize) -> Result<Vec<Probe>, String> {
        self.probe_from(&self.ns, proto, addr, port, count)
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        for child in &mut self.servers {
            let _ = child.kill();
            let _ = child.wait();
        }
        for ns in self.namespaces.iter().rev() {
            let _ = Command::new("ip")
                .args(["netns", "del", ns])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// The names of the pods that answered, sorted and deduplicated.
pub fn answered(probes: &[Probe]) -> Vec<String> {
    let mut names: Vec<String> = probes
        .iter()
        .filter_map(|p| p.name().map(str::to_owned))
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Fails unless every probe got an answer.
pub fn all_answered(what: &str, probes: &[Probe]) -> Result<(), String> {
    match probes.iter().find(|p| p.name().is_none()) {
        Some(p) => Err(format!(
            "{what}: not every attempt was answered ({p:?}): {probes:?}"
        )),
        None => Ok(()),
    }
}

/// Deletes namespaces left by earlier runs that were killed before their `Drop` ran (named
/// `svkPID-...` for a process that no longer exists).
fn remove_stale_namespaces() {
    let list = must(&["ip", "netns", "list"]).unwrap_or_default();
    for name in list.lines().filter_map(|l| l.split_whitespace().next()) {
        let Some(pid) = name
            .strip_prefix("svk")
            .and_then(|r| r.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            let _ = must(&["ip", "netns", "del", name]);
        }
    }
}

/// A check of a kernel suite: a name and a function of the shared fixture.
pub type Check<F> = (&'static str, fn(&mut F) -> Result<(), String>);

/// Runs a kernel suite as a `harness = false` test binary: prints one line per check (`ok`,
/// `FAILED`, or `SKIPPED` when the machine cannot run kernel tests), a summary that counts
/// skipped checks apart from passed ones, and exits non-zero when a check failed. Command-line
/// words that are not flags filter the checks by substring, as libtest does.
///
/// `setup` builds the fixture once (node, pods, first rule set); the checks then run in order
/// against it, so later checks may rely on the state earlier ones left (a partial sync last).
pub fn run_suite<F>(
    suite: &str,
    tools: &[&str],
    setup: impl FnOnce() -> Result<F, String>,
    checks: &[Check<F>],
) {
    let filters: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    if std::env::args().any(|a| a == "--list") {
        for (name, _) in checks {
            println!("{name}: test");
        }
        return;
    }
    let chosen: Vec<&Check<F>> = checks
        .iter()
        .filter(|(name, _)| filters.is_empty() || filters.iter().any(|f| name.contains(f.as_str())))
        .collect();
    println!("\nrunning {} kernel checks ({suite})", chosen.len());
    if chosen.is_empty() {
        return;
    }
    if let Some(why) = skip_reason(tools) {
        for (name, _) in &chosen {
            println!("test {name} ... SKIPPED");
        }
        eprintln!(
            "\n*** SKIPPED: {} kernel checks of {suite} did not run: {why}.\n*** They count as skipped, not passed. Run as root with iproute2, python3 and {} installed.\n",
            chosen.len(),
            tools.join(", ")
        );
        println!(
            "\ntest result: SKIPPED. 0 passed; 0 failed; {} skipped (not run: {why})\n",
            chosen.len()
        );
        return;
    }
    remove_stale_namespaces();
    let mut fixture = match setup() {
        Ok(f) => f,
        Err(e) => {
            println!("setup of {suite} ... FAILED\n{e}");
            println!(
                "\ntest result: FAILED. 0 passed; {} failed (setup)\n",
                chosen.len()
            );
            std::process::exit(101);
        }
    };
    let (mut passed, mut failed) = (0, Vec::new());
    for (name, check) in chosen {
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&mut fixture)))
            .unwrap_or_else(|_| Err("panicked".into()));
        match result {
            Ok(()) => {
                passed += 1;
                println!("test {name} ... ok");
            }
            Err(e) => {
                println!("test {name} ... FAILED\n{e}\n");
                failed.push(*name);
            }
        }
    }
    drop(fixture);
    // Every namespace this run made must be gone.
    let left: Vec<String> = must(&["ip", "netns", "list"])
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(&format!("svk{}-", std::process::id())))
        .map(str::to_owned)
        .collect();
    if !left.is_empty() {
        println!("test cleanup_removes_every_namespace ... FAILED\nleft behind: {left:?}\n");
        failed.push("cleanup_removes_every_namespace");
    }
    if failed.is_empty() {
        println!("\ntest result: ok. {passed} passed; 0 failed; 0 skipped\n");
    } else {
        println!(
            "\ntest result: FAILED. {passed} passed; {} failed: {}\n",
            failed.len(),
            failed.join(", ")
        );
        std::process::exit(101);
    }
}
