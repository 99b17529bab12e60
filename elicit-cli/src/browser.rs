//! Opening a URL the user consented to, and waiting politely while its out-of-band step is
//! pending.

use std::process::Stdio;
use std::time::Duration;

use elicit_runtime::client::CheckedUrl;

/// How long an opener command may run before it is taken to have opened the page (browsers that
/// stay in the foreground never exit on their own).
const OPENER_GRACE: Duration = Duration::from_secs(10);

/// Opens `url` with `browser` (run as `CMD URL`, the URL passed as one argument, never through a
/// shell's parsing) or with the system's opener.
pub(crate) async fn open(browser: Option<&str>, url: &CheckedUrl) -> Result<(), String> {
    let mut command = match browser {
        Some(cmd) => {
            let mut command = tokio::process::Command::new("sh");
            // "$1" is the URL: the shell never interprets it.
            command.arg("-c").arg(format!("{cmd} \"$1\"")).arg("elicit-browser").arg(&url.url);
            command
        }
        None => system_opener(&url.url),
    };
    command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).kill_on_drop(false);
    let mut child = command.spawn().map_err(|e| format!("cannot start the browser: {e}"))?;
    match tokio::time::timeout(OPENER_GRACE, child.wait()).await {
        Ok(Ok(status)) if status.success() => Ok(()),
        Ok(Ok(status)) => Err(format!("the browser command failed ({status})")),
        Ok(Err(e)) => Err(format!("the browser command failed: {e}")),
        // Still running: a browser in the foreground. It has the page.
        Err(_) => Ok(()),
    }
}

fn system_opener(url: &str) -> tokio::process::Command {
    let mut command = if cfg!(target_os = "macos") {
        tokio::process::Command::new("open")
    } else if cfg!(windows) {
        let mut c = tokio::process::Command::new("cmd");
        c.args(["/C", "start", ""]);
        c
    } else {
        tokio::process::Command::new("xdg-open")
    };
    command.arg(url);
    command
}

/// The delay before the `retries`-th automatic retry of a pending step: 1, 2, 4, 8 then 15 s.
pub(crate) fn backoff(retries: u32) -> Duration {
    let seconds = 1u64 << retries.saturating_sub(1).min(4);
    Duration::from_secs(seconds.min(15))
}

/// The URL with its host emphasised for a terminal (bold, underlined), or as-is otherwise.
pub(crate) fn highlighted(url: &CheckedUrl, ansi: bool) -> String {
    let range = url.host_range.clone();
    match (ansi, url.url.get(..range.start), url.url.get(range.clone()), url.url.get(range.end..)) {
        (true, Some(before), Some(host), Some(after)) => format!("{before}\x1b[1;4m{host}\x1b[0m{after}"),
        _ => url.url.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_caps() {
        let delays: Vec<u64> = (1..=7).map(|r| backoff(r).as_secs()).collect();
        assert_eq!(delays, [1, 2, 4, 8, 15, 15, 15]);
    }

    #[test]
    fn highlights_only_the_host() {
        let url = elicit_runtime::client::check_url("https://user@pay.example.com/x").expect("a valid URL");
        assert_eq!(highlighted(&url, true), "https://user@\x1b[1;4mpay.example.com\x1b[0m/x");
        assert_eq!(highlighted(&url, false), "https://user@pay.example.com/x");
    }
}
