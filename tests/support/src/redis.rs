//! A throw-away `redis-server` on a free loopback port, without persistence, optionally with a
//! password; killed when dropped. Used by the scale-out and hardening tests.

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
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free loopback port");
        let mut redis = Redis { port, password: password.map(str::to_owned), child: None };
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
