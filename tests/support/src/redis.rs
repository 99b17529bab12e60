//! A throw-away `redis-server` on a free loopback port, without persistence (or with the
//! persistence the store's docs ask for, [`Redis::start_durable`]), optionally with a password;
//! and a throw-away Redis Cluster of three masters and three replicas ([`Cluster`]). Killed when
//! dropped. Used by the scale-out and hardening tests.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long `redis-server` may take to answer its first `PING`.
pub const STARTUP: Duration = Duration::from_secs(20);

/// A running `redis-server`.
pub struct Redis {
    /// The loopback port it listens on.
    pub port: u16,
    password: Option<String>,
    /// Settings after the defaults (later ones win in redis-server's command line).
    settings: Vec<String>,
    child: Option<Child>,
}

/// Whether `redis-server` is installed; when it is not, `test` skips (see [`crate::skip`]).
pub fn installed(test: &str) -> bool {
    let installed = Command::new("redis-server")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !installed {
        crate::skip::missing_tool(test, "redis-server", "apt-get install redis-server");
    }
    installed
}

impl Redis {
    /// Starts one (with `requirepass` when `password` is given) and waits until it answers.
    /// Panics when it cannot.
    pub fn start(password: Option<&str>) -> Redis {
        Redis::start_with(password, Vec::new())
    }

    /// Starts one with the persistence `RedisStore`'s docs ask of a deployment that must not lose
    /// an acknowledged write when Redis itself restarts: the append-only file, synced at every
    /// write (`appendonly yes`, `appendfsync always`), in `dir`. A restart reads it back.
    pub fn start_durable(password: Option<&str>, dir: &std::path::Path) -> Redis {
        let dir = dir.to_str().expect("a UTF-8 directory").to_owned();
        Redis::start_with(password, strings(&["--appendonly", "yes", "--appendfsync", "always", "--dir", &dir]))
    }

    fn start_with(password: Option<&str>, settings: Vec<String>) -> Redis {
        let port = free_port(false);
        let mut redis = Redis { port, password: password.map(str::to_owned), settings, child: None };
        redis.restart();
        redis
    }

    /// [`Redis::start`], or `None` when `redis-server` is not installed and `CI` is not set (the
    /// test `test` then says on stderr that it skipped, see [`crate::skip`]).
    pub fn start_or_skip(test: &str, password: Option<&str>) -> Option<Redis> {
        installed(test).then(|| Redis::start(password))
    }

    /// One inline command; its reply's values (an integer, a string, or an array of strings).
    pub fn command(&self, command: &str) -> Vec<String> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        if let Some(password) = &self.password {
            stream.write_all(format!("AUTH {password}\r\n").as_bytes()).unwrap();
        }
        stream.write_all(format!("{command}\r\n").as_bytes()).unwrap();
        let mut reader = BufReader::new(stream);
        let mut line = String::new();
        let mut read_line = |line: &mut String| {
            line.clear();
            reader.read_line(line).unwrap();
            line.trim_end().to_owned()
        };
        if self.password.is_some() {
            let auth = read_line(&mut line);
            assert_eq!(auth, "+OK", "AUTH was refused");
        }
        let head = read_line(&mut line);
        match head.split_at(1) {
            (":", n) => vec![n.to_owned()],
            ("*", n) => (0..n.parse::<usize>().unwrap())
                .map(|_| {
                    let _length = read_line(&mut line);
                    read_line(&mut line)
                })
                .collect(),
            _ => panic!("unexpected reply to {command}: {head}"),
        }
    }

    /// `redis://[:PASSWORD@]127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        match &self.password {
            Some(password) => format!("redis://:{password}@127.0.0.1:{}", self.port),
            None => format!("redis://127.0.0.1:{}", self.port),
        }
    }

    /// Starts (again) on the same port and waits, at most [`STARTUP`], until it answers `PING`.
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "redis is already running");
        let mut command = Command::new("redis-server");
        command.args(["--port", &self.port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]);
        if let Some(password) = &self.password {
            command.args(["--requirepass", password]);
        }
        command.args(&self.settings);
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server starts");
        self.child = Some(child);
        let deadline = Instant::now() + STARTUP;
        while !self.answers_ping() {
            assert!(Instant::now() < deadline, "redis-server on port {} did not answer PING in {STARTUP:?}", self.port);
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Whether it answers `PING` (after `AUTH`, when it has a password) with `+PONG`.
    fn answers_ping(&self) -> bool {
        let Ok(mut stream) = TcpStream::connect(("127.0.0.1", self.port)) else { return false };
        let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
        let request = match &self.password {
            Some(password) => format!("AUTH {password}\r\nPING\r\n"),
            None => "PING\r\n".to_owned(),
        };
        if stream.write_all(request.as_bytes()).is_err() {
            return false;
        }
        let mut reply = Vec::new();
        let mut chunk = [0u8; 64];
        while reply.len() < 64 {
            match stream.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => reply.extend_from_slice(&chunk[..n]),
            }
            if reply.windows(7).any(|w| w == b"+PONG\r\n") {
                return true;
            }
        }
        false
    }

    /// Kills the server (an outage: no shutdown handshake) and waits for it to exit.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A free loopback port; with `bus`, one whose cluster bus port (10000 above) is free too.
fn free_port(bus: bool) -> u16 {
    loop {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a free loopback port");
        let port = listener.local_addr().expect("a bound port").port();
        if !bus || port.checked_add(10_000).is_some_and(|bus| TcpListener::bind(("127.0.0.1", bus)).is_ok()) {
            return port;
        }
    }
}

/// How long the cluster may take to form, or to promote a replica.
pub const CLUSTER_FORMS: Duration = Duration::from_secs(45);

/// A Redis Cluster on loopback: three masters and a replica of each, every node a
/// `redis-server` of its own (no persistence), in a temporary directory; killed when dropped.
/// `cluster-node-timeout` is one second and a master's loss leaves the other slots serving
/// (`cluster-require-full-coverage no`).
pub struct Cluster {
    /// The nodes, masters first as created (a replica's role may change by a failover).
    pub nodes: Vec<Redis>,
    _dir: tempfile::TempDir,
}

impl Cluster {
    /// [`Cluster::start`], or `None` when `redis-server` is not installed and `CI` is not set.
    pub fn start_or_skip(test: &str) -> Option<Cluster> {
        let cli = Command::new("redis-cli").arg("--version").stdout(Stdio::null()).status().is_ok_and(|s| s.success());
        if !cli {
            crate::skip::missing_tool(test, "redis-cli", "apt-get install redis-tools");
        }
        (cli && installed(test)).then(Cluster::start)
    }

    /// Starts six nodes, joins them (`redis-cli --cluster create`, one replica per master) and
    /// waits, at most [`CLUSTER_FORMS`], until every node says the cluster is `ok`.
    pub fn start() -> Cluster {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let nodes: Vec<Redis> = (0..6)
            .map(|_| {
                let port = free_port(true);
                let config = dir.path().join(format!("nodes-{port}.conf"));
                let settings = [
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    config.to_str().expect("a UTF-8 path"),
                    "--cluster-node-timeout",
                    "1000",
                    "--cluster-require-full-coverage",
                    "no",
                    "--cluster-replica-validity-factor",
                    "0",
                    "--dir",
                    dir.path().to_str().expect("a UTF-8 path"),
                ];
                let mut redis = Redis { port, password: None, settings: strings(&settings), child: None };
                redis.restart();
                redis
            })
            .collect();
        let mut create = Command::new("redis-cli");
        create.arg("--cluster").arg("create");
        create.args(nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)));
        create.args(["--cluster-replicas", "1", "--cluster-yes"]);
        let mut child =
            create.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("redis-cli starts");
        let deadline = Instant::now() + CLUSTER_FORMS;
        let status = loop {
            if let Some(status) = child.try_wait().expect("redis-cli's status") {
                break status;
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                panic!("redis-cli --cluster create did not finish in {CLUSTER_FORMS:?}");
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        assert!(status.success(), "redis-cli --cluster create failed: {status}");
        let cluster = Cluster { nodes, _dir: dir };
        cluster.wait_ok(None);
        cluster
    }

    /// `redis+cluster://127.0.0.1:PORT,…`: every node.
    pub fn url(&self) -> String {
        let nodes: Vec<String> = self.nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)).collect();
        format!("redis+cluster://{}", nodes.join(","))
    }

    /// One command to the node on `port`; its reply as text (a bulk or simple string, an
    /// integer, an error as `-ERR…`), `None` when the node does not answer.
    pub fn query(port: u16, args: &[&str]) -> Option<String> {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
        stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
        let mut request = format!("*{}\r\n", args.len());
        for arg in args {
            request.push_str(&format!("${}\r\n{arg}\r\n", arg.len()));
        }
        stream.write_all(request.as_bytes()).ok()?;
        let mut reader = BufReader::new(stream);
        let mut head = String::new();
        reader.read_line(&mut head).ok()?;
        let head = head.trim_end();
        match head.split_at_checked(1)? {
            ("$", n) => {
                let length: usize = n.parse().ok()?;
                let mut body = vec![0; length + 2];
                reader.read_exact(&mut body).ok()?;
                body.truncate(length);
                String::from_utf8(body).ok()
            }
            ("+" | ":", rest) => Some(rest.to_owned()),
            ("-", _) => Some(head.to_owned()),
            _ => None,
        }
    }

    /// The keys matching `pattern` on every live master (`redis-cli --scan`).
    pub fn keys(&self, pattern: &str) -> Vec<String> {
        let mut keys = Vec::new();
        for port in self.masters() {
            let output = Command::new("redis-cli")
                .args(["-p", &port.to_string(), "--scan", "--pattern", pattern])
                .stdin(Stdio::null())
                .output()
                .expect("redis-cli runs");
            assert!(output.status.success(), "redis-cli --scan on {port} failed");
            keys.extend(String::from_utf8_lossy(&output.stdout).lines().map(str::to_owned));
        }
        keys
    }

    /// The slot `key` hashes to (`CLUSTER KEYSLOT`, asked of a live node).
    pub fn keyslot(&self, key: &str) -> u16 {
        let reply = self.ask(&["CLUSTER", "KEYSLOT", key]);
        reply.parse().unwrap_or_else(|_| panic!("CLUSTER KEYSLOT answered {reply}"))
    }

    /// Asks the first node that answers.
    fn ask(&self, args: &[&str]) -> String {
        self.nodes
            .iter()
            .filter(|n| n.child.is_some())
            .find_map(|n| Cluster::query(n.port, args))
            .unwrap_or_else(|| panic!("no node answered {args:?}"))
    }

    /// `(port, node id, master id or "-")` of each node as the live nodes see them now, with
    /// whether it is a master.
    fn topology(&self) -> Vec<(u16, String, bool, String)> {
        self.ask(&["CLUSTER", "NODES"])
            .lines()
            .filter_map(|line| {
                let fields: Vec<&str> = line.split(' ').collect();
                let port = fields.get(1)?.split(['@', ':']).nth(1)?.parse().ok()?;
                let flags = fields.get(2)?;
                let master = flags.contains("master") && !flags.contains("fail");
                Some((port, (*fields.first()?).to_owned(), master, (*fields.get(3)?).to_owned()))
            })
            .collect()
    }

    /// The ports of the live masters.
    pub fn masters(&self) -> Vec<u16> {
        self.topology().into_iter().filter(|(_, _, master, _)| *master).map(|(port, ..)| port).collect()
    }

    /// The port of the master serving `slot` now.
    pub fn master_of(&self, slot: u16) -> u16 {
        let shards = self.ask(&["CLUSTER", "NODES"]);
        shards
            .lines()
            .filter(|line| line.contains("master") && !line.contains("fail"))
            .find_map(|line| {
                let fields: Vec<&str> = line.split(' ').collect();
                let serves = fields.iter().skip(8).any(|range| {
                    let mut ends = range.split('-').map(|n| n.parse::<u16>().ok());
                    match (ends.next().flatten(), ends.next()) {
                        (Some(from), None) => from == slot,
                        (Some(from), Some(Some(to))) => (from..=to).contains(&slot),
                        _ => false,
                    }
                });
                serves.then(|| fields.get(1)?.split(['@', ':']).nth(1)?.parse().ok())?
            })
            .unwrap_or_else(|| panic!("no live master serves slot {slot}"))
    }

    /// Kills the master on `port` (no shutdown: an outage), promotes its replica (`CLUSTER
    /// FAILOVER FORCE` on it) and waits, at most [`CLUSTER_FORMS`], until the replica is a master
    /// and every live node says the cluster is `ok`. Returns the new master's port.
    pub fn fail_over(&mut self, port: u16) -> u16 {
        let topology = self.topology();
        let (_, id, ..) = topology.iter().find(|(p, ..)| *p == port).expect("the master is a node");
        let replica = topology
            .iter()
            .find(|(_, _, master, of)| !master && of == id)
            .map(|(p, ..)| *p)
            .unwrap_or_else(|| panic!("the master on {port} has no replica"));
        self.nodes.iter_mut().filter(|n| n.port == port).for_each(Redis::stop);
        let deadline = Instant::now() + CLUSTER_FORMS;
        let mut last = Instant::now() - Duration::from_secs(10);
        loop {
            if Cluster::query(replica, &["INFO", "replication"]).is_some_and(|info| info.contains("role:master")) {
                break;
            }
            assert!(Instant::now() < deadline, "the replica on {replica} was not promoted in {CLUSTER_FORMS:?}");
            // Asked again now and then: refused while the replica does not yet see its master down.
            if last.elapsed() > Duration::from_secs(2) {
                let _ = Cluster::query(replica, &["CLUSTER", "FAILOVER", "FORCE"]);
                last = Instant::now();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.wait_ok(Some(replica));
        replica
    }

    /// Starts the node on `port` again (on its cluster configuration: a master that was failed
    /// over comes back as a replica) and waits, at most [`CLUSTER_FORMS`], until it replicates.
    pub fn rejoin(&mut self, port: u16) {
        self.nodes.iter_mut().filter(|n| n.port == port).for_each(Redis::restart);
        let deadline = Instant::now() + CLUSTER_FORMS;
        while !Cluster::query(port, &["INFO", "replication"])
            .is_some_and(|info| info.contains("role:slave") && info.contains("master_link_status:up"))
        {
            assert!(Instant::now() < deadline, "the node on {port} did not replicate in {CLUSTER_FORMS:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
        self.wait_ok(None);
    }

    /// Waits until every live node says `cluster_state:ok` and (`promoted`) sees that node as a
    /// master.
    fn wait_ok(&self, promoted: Option<u16>) {
        let deadline = Instant::now() + CLUSTER_FORMS;
        loop {
            let ok = self.nodes.iter().filter(|n| n.child.is_some()).all(|n| {
                Cluster::query(n.port, &["CLUSTER", "INFO"]).is_some_and(|info| info.contains("cluster_state:ok"))
                    && promoted.is_none_or(|p| {
                        Cluster::query(n.port, &["CLUSTER", "NODES"]).is_some_and(|nodes| {
                            nodes.lines().any(|l| l.contains(&format!(":{p}@")) && l.contains("master"))
                        })
                    })
            });
            if ok {
                return;
            }
            assert!(Instant::now() < deadline, "the cluster was not ok in {CLUSTER_FORMS:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}
