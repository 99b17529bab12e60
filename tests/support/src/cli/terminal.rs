//! `elicit` on a pseudo-terminal, for the interactive tests: keys as inquire 0.9.4 (crossterm
//! backend) reads them, and a terminal that keeps everything printed for failure messages.

use std::process::Command;
use std::time::Duration;

use rexpect::process::WaitStatus;
use rexpect::session::{Options, PtySession, spawn_with_options};

use super::bins;

/// The Enter key.
pub const ENTER: &str = "\r";
/// The down-arrow key.
pub const DOWN: &str = "\x1b[B";
/// The Escape key.
pub const ESCAPE: &str = "\x1b";
/// The Backspace key.
pub const BACKSPACE: &str = "\x7f";

/// How long one expected text may take to appear.
pub const STEP: Duration = Duration::from_secs(30);

/// `elicit` on a pseudo-terminal, with everything it printed kept for failure messages.
pub struct Terminal {
    /// The pseudo-terminal session.
    pub session: PtySession,
    /// Everything read from it so far.
    pub transcript: String,
}

impl Terminal {
    /// Starts `elicit ARGS` on a 200x50 pseudo-terminal (a fresh pty has no size).
    pub fn start(args: &[&str]) -> Terminal {
        Terminal::start_with_env(args, &[])
    }

    /// Starts `elicit ARGS` as [`Terminal::start`] does, with `env` (name, value) set.
    pub fn start_with_env(args: &[&str], env: &[(&str, &str)]) -> Terminal {
        let mut command = Command::new("sh");
        command.envs(env.iter().copied());
        command
            .arg("-c")
            .arg("stty cols 200 rows 50 2>/dev/null; exec \"$0\" \"$@\"")
            .arg(&bins().elicit)
            .args(args)
            .env("TERM", "xterm-256color")
            .env_remove("RUST_LOG");
        let options = Options::new().timeout_ms(Some(STEP.as_millis() as u64)).strip_ansi_escape_codes(true);
        let session =
            spawn_with_options(command, options).unwrap_or_else(|e| panic!("cannot start elicit on a pty: {e}"));
        Terminal { session, transcript: String::new() }
    }

    /// Waits for `needle` (ASCII: the pty reader decodes bytes one by one) and returns what came
    /// before it.
    pub fn expect(&mut self, needle: &str) -> String {
        match self.session.exp_string(needle) {
            Ok(before) => {
                self.transcript.push_str(&before);
                self.transcript.push_str(needle);
                before
            }
            Err(e) => panic!("waiting for {needle:?}: {e}\n--- screen so far ---\n{}", self.transcript),
        }
    }

    /// Waits for a text matching `regex` and returns the match.
    pub fn expect_regex(&mut self, regex: &str) -> String {
        match self.session.exp_regex(regex) {
            Ok((before, matched)) => {
                self.transcript.push_str(&before);
                self.transcript.push_str(&matched);
                matched
            }
            Err(e) => panic!("waiting for /{regex}/: {e}\n--- screen so far ---\n{}", self.transcript),
        }
    }

    /// Types `keys`.
    pub fn send(&mut self, keys: &str) {
        self.session.send(keys).unwrap();
        self.session.flush().unwrap();
    }

    /// Waits for `label` (a prompt), then types `keys`.
    pub fn answer(&mut self, label: &str, keys: &str) {
        self.expect(label);
        self.send(keys);
    }

    /// Cancels the working task of a `call --tasks` as the person does: `r` at the prompt (check
    /// now), then `c`; the call must end cancelled, with exit code 1. Returns the screen.
    pub fn cancel_task(mut self) -> String {
        self.answer("Press r to check now, c to cancel the task.", "r");
        self.send("c");
        self.expect("Cancelling the task.");
        self.expect("cancelled");
        let (code, screen) = self.finish();
        assert_eq!(code, 1, "{screen}");
        screen
    }

    /// Waits for the end and returns the exit code and the last screen.
    pub fn finish(mut self) -> (i32, String) {
        let rest = self.session.exp_eof().unwrap_or_else(|e| panic!("elicit did not end: {e}\n{}", self.transcript));
        self.transcript.push_str(&rest);
        let status = self.session.process().wait().unwrap();
        match status {
            WaitStatus::Exited(_, code) => (code, self.transcript),
            other => panic!("elicit ended with {other:?}\n{}", self.transcript),
        }
    }
}
