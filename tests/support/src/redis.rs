//! A throw-away `redis-server` on a free loopback port, without persistence, optionally with a
//! password; killed when dropped. Used by the scale-out and hardening tests.

use std::io::{Read, Write};
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
    /// test `test` then says on stderr that it skipped).
    pub fn start_or_skip(test: &str, password: Option<&str>) -> Option<Redis> {
        let installed =
            Command::new("redis-server").arg("--version").stdout(Stdio::null()).status().is_ok_and(|s| s.success());
        if !installed {
            assert!(std::env::var_os("CI").is_none(), "redis-server is not installed, and CI is set");
            let _ = writeln!(std::io::stderr(), "SKIPPED {test}: redis-server is not installed");
            return None;
        }
        Some(Redis::start(password))
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
